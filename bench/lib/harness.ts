// Small helpers shared by the benchmark scripts in bench/: timing, percentiles,
// plain-text tables, progress lines, a temporary directory that is removed
// afterwards, and the JSON results file. No timing is ever asserted here.
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants as fsConstants, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { cpus, platform, release, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export const BENCH_DIR = dirname(dirname(fileURLToPath(import.meta.url)));
export const RESULTS_DIR = join(BENCH_DIR, 'results');

/** Nanoseconds now (monotonic). */
export const nowNs = (): bigint => process.hrtime.bigint();
/** Seconds since a nowNs() reading. */
export const secondsSince = (t0: bigint): number => Number(nowNs() - t0) / 1e9;

/** Deterministic PRNG (mulberry32), so every run benchmarks the same workload. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function pick<T>(rand: () => number, list: readonly T[]): T {
  return list[Math.floor(rand() * list.length)] as T;
}

export interface Summary {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

/** Percentiles (nearest rank) of a list of samples, in the samples' unit. */
export function summarize(samples: ArrayLike<number>): Summary {
  const n = samples.length;
  if (n === 0) return { count: 0, p50: NaN, p90: NaN, p99: NaN, max: NaN, mean: NaN };
  const sorted = Float64Array.from(samples).sort();
  const at = (q: number): number => sorted[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))]!;
  let sum = 0;
  for (let i = 0; i < n; i++) sum += sorted[i]!;
  return { count: n, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: sorted[n - 1]!, mean: sum / n };
}

export function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** 12345.6 -> "12,346"; small numbers keep `digits` decimals. */
export function fmt(v: number, digits = 1): string {
  if (!Number.isFinite(v)) return String(v);
  if (Math.abs(v) >= 100) return Math.round(v).toLocaleString('en-US');
  return v.toFixed(digits);
}

export function ratio(a: number, b: number): string {
  if (!Number.isFinite(a) || !Number.isFinite(b) || b === 0) return 'n/a';
  const r = a / b;
  return `${r >= 10 ? r.toFixed(0) : r >= 1 ? r.toFixed(1) : r.toFixed(2)}x`;
}

/** Print rows as an aligned plain-text table (first column left, the others right-aligned). */
export function table(headers: string[], rows: string[][]): void {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log(`  ${line(headers)}`);
  console.log(`  ${widths.map((w) => '-'.repeat(w)).join('  ')}`);
  for (const r of rows) console.log(`  ${line(r)}`);
}

/**
 * Progress lines for long loops: call tick(done) as often as you like; it
 * prints at most every `everySeconds` (default 2 s) and only once the loop
 * has run that long. Call it outside the timed region.
 */
export function progress(label: string, total: number, everySeconds = 2): { tick(done: number): void; end(): number } {
  const t0 = nowNs();
  let next = everySeconds;
  let printed = false;
  return {
    tick(done: number) {
      const s = secondsSince(t0);
      if (s >= next) {
        printed = true;
        next = s + everySeconds;
        console.log(`    .. ${label}: ${done.toLocaleString('en-US')}/${total.toLocaleString('en-US')} (${s.toFixed(1)} s)`);
      }
    },
    end() {
      const s = secondsSince(t0);
      if (printed || s >= everySeconds) console.log(`    .. ${label}: done in ${s.toFixed(1)} s`);
      return s;
    },
  };
}

/** A fresh directory under the OS temp dir (BENCH_TMPDIR overrides the parent), removed by cleanup(). */
export function tempDir(prefix: string): { path: string; cleanup(): void } {
  const parent = process.env.BENCH_TMPDIR || tmpdir();
  mkdirSync(parent, { recursive: true });
  const path = mkdtempSync(join(parent, `${prefix}-`));
  let removed = false;
  const cleanup = () => {
    if (removed) return;
    removed = true;
    rmSync(path, { recursive: true, force: true });
  };
  process.once('exit', cleanup);
  return { path, cleanup };
}

export function machine(): Record<string, unknown> {
  const c = cpus();
  return {
    node: process.version,
    platform: `${platform()} ${release()}`,
    cpus: c.length,
    cpuModel: c[0]?.model ?? 'unknown',
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    tmpdir: process.env.BENCH_TMPDIR || tmpdir(),
  };
}

/** Write bench/results/<name>.json and return its path. */
export function writeResults(name: string, data: unknown): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = join(RESULTS_DIR, `${name}.json`);
  writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`);
  return file;
}

/** An integer from the environment (e.g. BENCH_DECISIONS=5000 for a quick run), or the default. */
export function envInt(name: string, fallback: number): number {
  const v = process.env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive whole number, got ${JSON.stringify(v)}`);
  return n;
}

// ---------------------------------------------------------------------------
// Brokers and helper processes for the MQTT benchmarks (roundtrip, ingest,
// memory). Each runs in its own process so that it does not share the
// benchmark's event loop; the benchmark stops them when it ends.

export type BrokerKind = 'aedes' | 'mosquitto' | 'mosquitto-nagle';

export interface BenchBroker {
  kind: BrokerKind;
  url: string;
  port: number;
  /** What it is, for the tables: `aedes 1.2 (own process, TCP_NODELAY)`. */
  label: string;
  stop(): Promise<void>;
}

const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

/** mosquitto's path, or undefined when it is not installed (Debian puts it in /usr/sbin). */
export function mosquittoPath(): string | undefined {
  for (const p of [
    process.env.MOSQUITTO_BIN,
    ...(process.env.PATH ?? '').split(':').map((d) => `${d}/mosquitto`),
    '/usr/sbin/mosquitto',
    '/usr/local/sbin/mosquitto',
  ]) {
    if (!p) continue;
    try {
      accessSync(p, fsConstants.X_OK);
      return p;
    } catch {
      // next
    }
  }
  return undefined;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

export interface Helper {
  child: ChildProcess;
  /** Resolves with the next stdout line that matches. */
  line(match: RegExp, timeoutMs?: number): Promise<string>;
  send(line: string): void;
  stop(): Promise<void>;
}

/**
 * Run an ES module given as text in its own Node process (cwd = the package,
 * so it can import mqtt and aedes), with `env` added. stdout is read line by
 * line; stderr passes through.
 */
export function nodeHelper(code: string, env: Record<string, string> = {}): Helper {
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], {
    cwd: dirname(BENCH_DIR),
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  return wrap(child);
}

function wrap(child: ChildProcess): Helper {
  children.add(child);
  child.once('exit', () => children.delete(child));
  let buffer = '';
  const lines: string[] = [];
  const waiters: Array<{ match: RegExp; resolve: (l: string) => void }> = [];
  child.stdout?.setEncoding('utf8');
  child.stdout?.on('data', (chunk: string) => {
    buffer += chunk;
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      const i = waiters.findIndex((w) => w.match.test(line));
      if (i >= 0) waiters.splice(i, 1)[0]!.resolve(line);
      else lines.push(line);
    }
  });
  return {
    child,
    line(match, timeoutMs = 30_000) {
      const i = lines.findIndex((l) => match.test(l));
      if (i >= 0) return Promise.resolve(lines.splice(i, 1)[0]!);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`helper process: no line matching ${match} within ${timeoutMs} ms`)), timeoutMs);
        const onExit = (code: number | null) => reject(new Error(`helper process exited (${code}) before a line matching ${match}`));
        child.once('exit', onExit);
        waiters.push({
          match,
          resolve: (l) => {
            clearTimeout(timer);
            child.off('exit', onExit);
            resolve(l);
          },
        });
      });
    },
    send(line) {
      child.stdin?.write(`${line}\n`);
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(timer);
    },
  };
}

const AEDES_CODE = `
import net from 'node:net';
import { Aedes } from 'aedes';
const broker = await Aedes.createBroker();
const server = net.createServer((socket) => { socket.setNoDelay(true); broker.handle(socket); });
server.listen(0, '127.0.0.1', () => console.log('port ' + server.address().port));
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
`;

/**
 * A broker in its own process on 127.0.0.1: aedes (Node, TCP_NODELAY on its
 * sockets), mosquitto with `set_tcp_nodelay true`, or `mosquitto-nagle`:
 * mosquitto's default configuration, where the broker's sockets keep Nagle's
 * algorithm on. Returns undefined for mosquitto when it is not installed.
 */
export async function startBroker(kind: BrokerKind): Promise<BenchBroker | undefined> {
  if (kind === 'aedes') {
    const h = nodeHelper(AEDES_CODE);
    const port = Number((await h.line(/^port \d+$/, 15_000)).slice(5));
    return { kind, port, url: `mqtt://127.0.0.1:${port}`, label: 'aedes 1.2, own process, TCP_NODELAY', stop: () => h.stop() };
  }
  const bin = mosquittoPath();
  if (!bin) return undefined;
  const port = await freePort();
  const dir = tempDir(`hearth-bench-${kind}`);
  const conf = join(dir.path, 'mosquitto.conf');
  const lines = [`listener ${port} 127.0.0.1`, 'allow_anonymous true', 'persistence false', 'log_type error', 'log_type warning', 'max_queued_messages 0'];
  if (kind === 'mosquitto') lines.push('set_tcp_nodelay true');
  if (typeof process.getuid === 'function' && process.getuid() === 0) lines.push('user root');
  writeFileSync(conf, `${lines.join('\n')}\n`);
  const child = spawn(bin, ['-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    for (const l of chunk.split('\n')) if (l.trim() && !/should not be run as root/.test(l)) console.error(`    mosquitto: ${l}`);
  });
  const h = wrap(child);
  const deadline = Date.now() + 10_000;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = createConnection({ host: '127.0.0.1', port });
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) break;
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`mosquitto did not start on port ${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    kind,
    port,
    url: `mqtt://127.0.0.1:${port}`,
    label: kind === 'mosquitto' ? 'mosquitto, own process, set_tcp_nodelay true' : 'mosquitto, default config (Nagle on the broker side)',
    async stop() {
      await h.stop();
      dir.cleanup();
    },
  };
}

/** A full garbage collection now (exposes gc at run time; no --expose-gc flag needed). */
export function gcNow(): void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (g) {
    g();
    g();
    return;
  }
  setFlagsFromString('--expose-gc');
  const fn = runInNewContext('gc') as () => void;
  fn();
  fn();
}

/** process.memoryUsage() in MiB, after a full GC. */
export function memoryMiB(): { rss: number; heapUsed: number; external: number; arrayBuffers: number } {
  gcNow();
  const m = process.memoryUsage();
  const mib = (x: number) => Math.round((x / 2 ** 20) * 10) / 10;
  return { rss: mib(m.rss), heapUsed: mib(m.heapUsed), external: mib(m.external), arrayBuffers: mib(m.arrayBuffers) };
}
