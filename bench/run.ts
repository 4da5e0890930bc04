// Runs the benchmark scripts bench/*.ts (every top-level file but this one),
// one after another, each in its own Node process so they do not share JIT
// state, caches or open databases. `npm run bench -- policy` runs only the
// files whose name contains "policy". Benchmarks print their own numbers and
// write bench/results/<name>.json; this runner only fails when a script crashes.
import { spawnSync } from 'node:child_process';
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

const failed: string[] = [];
for (const f of files) {
  console.log(`\n=== ${f} ===`);
  const started = Date.now();
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(BENCH_DIR, f)], { stdio: 'inherit', env: process.env });
  const s = ((Date.now() - started) / 1000).toFixed(1);
  if (r.status !== 0) {
    failed.push(f);
    console.log(`=== ${f}: FAILED (${r.signal ? `signal ${r.signal}` : `exit ${r.status}`}) after ${s} s ===`);
  } else {
    console.log(`=== ${f}: done in ${s} s ===`);
  }
}
if (failed.length) {
  console.error(`\n${failed.length} of ${files.length} benchmark(s) failed: ${failed.join(', ')}`);
  process.exit(1);
}
