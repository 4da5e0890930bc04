// Small helpers shared by the benchmark scripts in bench/: timing, percentiles,
// plain-text tables, progress lines, a temporary directory that is removed
// afterwards, and the JSON results file. No timing is ever asserted here.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, platform, release, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

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
