// Benchmark: how long a `hearth` command takes to start and answer, against a
// bare `node -e 0` measured in the same run (interleaved, so a busy machine
// slows both alike).
//
//   node -e 0                      the floor: starting Node itself
//   hearth --version               loads nothing of the app           target <= 2x
//   hearth devices (daemon)        asks the running `hearth start`     target <= 3x
//   hearth call (daemon)           one audited call through it         target <= 3x
//   hearth devices --standalone    for reference: a Hearth of its own (no target)
//
// A script, not a test: it prints medians, ratios and MET / NOT MET, and writes
// bench/results/cli.json; it never fails on timings.
// Knobs: BENCH_CLI_RUNS (15), BENCH_TMPDIR.
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { envInt, fmt, machine, median, nowNs, ratio, secondsSince, table, tempDir, writeResults } from './lib/harness.js';

const RUNS = envInt('BENCH_CLI_RUNS', 15);
const HEARTH = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** Wall-clock milliseconds of one run to completion; a failed run stops the benchmark (it measured nothing). */
function timed(args: string[], cwd: string): number {
  const t0 = nowNs();
  const r = spawnSync(process.execPath, args, { cwd, encoding: 'utf8', env: { ...process.env, HEARTH_LOG_PRETTY: 'false' } });
  const ms = secondsSince(t0) * 1000;
  if (r.status !== 0) throw new Error(`${args.slice(1).join(' ')} exited ${r.status}: ${r.stderr}`);
  return ms;
}

async function main(): Promise<void> {
  const tmp = tempDir('hearth-bench-cli');
  const db = join(tmp.path, 'h.db');
  const port = await freePort();
  const daemon = spawn(process.execPath, [HEARTH, 'start', '--broker-port', String(port), '--http-port', '0', '--db', db, '--log-level', 'warn'], {
    cwd: tmp.path,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const killDaemon = () => {
    try {
      process.kill(-daemon.pid!, 'SIGKILL');
    } catch {
      // gone
    }
  };
  process.once('exit', killDaemon);
  try {
    let out = '';
    await new Promise<void>((resolve, reject) => {
      daemon.stdout!.on('data', (d) => {
        out += d;
        if (out.includes('Press Ctrl+C to stop.')) resolve();
      });
      daemon.once('exit', (code) => reject(new Error(`hearth start exited ${code} before it was ready`)));
    });
    console.log(`hearth start is running (${db}); ${RUNS} runs of each, interleaved\n`);

    const variants: Array<{ name: string; args: (i: number) => string[]; runs: number; target?: number }> = [
      { name: 'node -e 0', args: () => ['-e', '0'], runs: RUNS },
      { name: 'hearth --version', args: () => [HEARTH, '--version'], runs: RUNS, target: 2 },
      { name: 'hearth devices (daemon)', args: () => [HEARTH, 'devices', '--db', db], runs: RUNS, target: 3 },
      {
        name: 'hearth call (daemon)',
        args: (i) => [HEARTH, 'call', '--db', db, 'living_room_lamp', JSON.stringify({ action: i % 2 ? 'turn_off' : 'turn_on' })],
        runs: RUNS,
        target: 3,
      },
      {
        name: 'hearth devices --standalone',
        args: () => [HEARTH, 'devices', '--db', db, '--broker-port', String(port), '--standalone', '--wait', '1000'],
        runs: Math.min(RUNS, 3),
      },
    ];
    const samples = new Map<string, number[]>(variants.map((v) => [v.name, []]));
    // One warm-up each (disk cache), not counted.
    for (const v of variants) timed(v.args(0), tmp.path);
    for (let i = 0; i < RUNS; i++) {
      for (const v of variants) if (i < v.runs) samples.get(v.name)!.push(timed(v.args(i), tmp.path));
    }
    const base = median(samples.get('node -e 0')!);
    const rows: string[][] = [];
    const results: Record<string, unknown> = {};
    const verdicts: string[] = [];
    for (const v of variants) {
      const m = median(samples.get(v.name)!);
      const r = m / base;
      rows.push([
        v.name,
        fmt(m),
        fmt(Math.min(...samples.get(v.name)!)),
        ratio(m, base),
        v.target ? `<= ${v.target}x: ${r <= v.target ? 'MET' : 'NOT MET'}` : '',
      ]);
      results[v.name] = {
        medianMs: m,
        minMs: Math.min(...samples.get(v.name)!),
        runs: samples.get(v.name)!.length,
        ratio: r,
        ...(v.target ? { target: v.target, met: r <= v.target } : {}),
      };
      if (v.target) verdicts.push(`${v.name}: ${r <= v.target ? 'MET' : 'NOT MET'} (${ratio(m, base)})`);
    }
    table(['command', 'median ms', 'min ms', 'vs node -e 0', 'target'], rows);
    console.log(`\ntargets: ${verdicts.join('; ')}`);
    const file = writeResults('cli', { machine: machine(), runs: RUNS, results });
    console.log(`results: ${file}`);
  } finally {
    killDaemon();
    process.off('exit', killDaemon);
    tmp.cleanup();
  }
}

await main();
