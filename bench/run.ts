// Runs the benchmark scripts bench/*.ts (every top-level file but this one),
// one after another, each in its own Node process so they do not share JIT
// state, caches or open databases. `npm run bench -- policy` runs only the
// files whose name contains "policy". Benchmarks print their own numbers and
// write bench/results/<name>.json; this runner only fails when a script crashes.
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { BENCH_DIR } from './lib/harness.js';

const all = readdirSync(BENCH_DIR)
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && f !== 'run.ts')
  .sort();
const filters = process.argv.slice(2);
const files = filters.length ? all.filter((f) => filters.some((x) => f.includes(x))) : all;
if (!files.length) {
  console.error(`no benchmark in bench/ matches ${filters.join(' ')} (have: ${all.join(', ')})`);
  process.exit(1);
}

/** Runs one script, its output shown as it comes; resolves with its exit and the lines that state a target. */
function runScript(file: string): Promise<{ status: number | null; signal: NodeJS.Signals | null; targets: string[] }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(BENCH_DIR, file)], { stdio: ['inherit', 'pipe', 'inherit'], env: process.env });
    const targets: string[] = [];
    let rest = '';
    child.stdout.on('data', (chunk: Buffer) => {
      process.stdout.write(chunk);
      const lines = (rest + chunk.toString('utf8')).split('\n');
      rest = lines.pop()!;
      for (const l of lines) if (l.startsWith('TARGET ')) targets.push(l.slice(7));
    });
    child.on('close', (status, signal) => {
      if (rest.startsWith('TARGET ')) targets.push(rest.slice(7));
      resolve({ status, signal, targets });
    });
  });
}

const failed: string[] = [];
const targets: string[] = [];
for (const f of files) {
  console.log(`\n=== ${f} ===`);
  const started = Date.now();
  const r = await runScript(f);
  targets.push(...r.targets);
  const s = ((Date.now() - started) / 1000).toFixed(1);
  if (r.status !== 0) {
    failed.push(f);
    console.log(`=== ${f}: FAILED (${r.signal ? `signal ${r.signal}` : `exit ${r.status}`}) after ${s} s ===`);
  } else {
    console.log(`=== ${f}: done in ${s} s ===`);
  }
}
// Every target against its baseline of the same run, in one place (each script prints its `TARGET ...` lines).
if (targets.length) {
  console.log('\n=== targets (each against its baseline measured in the same run) ===');
  for (const t of targets) console.log(`  ${t}`);
}
if (failed.length) {
  console.error(`\n${failed.length} of ${files.length} benchmark(s) failed: ${failed.join(', ')}`);
  process.exit(1);
}
