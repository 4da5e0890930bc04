// Where running daemons say they are, so that a command finds the home's daemon from any folder: each
// `hearth start` writes `<pid>.json` (its database, broker and HTTP address) into a directory of the user's own
// (0700; $HEARTH_RUNTIME_DIR, else $XDG_RUNTIME_DIR/hearth, else <tmp>/hearth-<uid>) and removes it when it
// stops. An entry whose process is gone is stale and skipped (and removed).
import { lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface RunningDaemon {
  pid: number;
  /** The database it runs (absolute). */
  db: string;
  /** Its broker's URL (credentials never written). */
  broker: string;
  http?: string;
  startedAt: string;
}

export function runtimeDir(env = process.env): string {
  if (env.HEARTH_RUNTIME_DIR) return env.HEARTH_RUNTIME_DIR;
  if (env.XDG_RUNTIME_DIR) return join(env.XDG_RUNTIME_DIR, 'hearth');
  return join(tmpdir(), `hearth-${process.getuid?.() ?? 'user'}`);
}

/** The directory, made 0700 when missing; undefined when it is not ours alone (then nothing is trusted there). */
function ownDir(dir: string, create: boolean): string | undefined {
  try {
    if (create) mkdirSync(dir, { recursive: true, mode: 0o700 });
    const st = lstatSync(dir);
    const uid = process.getuid?.();
    if (!st.isDirectory() || (uid !== undefined && st.uid !== uid) || (process.platform !== 'win32' && (st.mode & 0o077) !== 0)) return undefined;
    return dir;
  } catch {
    return undefined;
  }
}

/** Say this daemon runs; returns the function that takes it back (at stop). */
export function announceDaemon(entry: Omit<RunningDaemon, 'pid' | 'startedAt'>, env = process.env): () => void {
  const dir = ownDir(runtimeDir(env), true);
  if (!dir) return () => undefined;
  const file = join(dir, `${process.pid}.json`);
  writeFileSync(file, `${JSON.stringify({ ...entry, pid: process.pid, startedAt: new Date().toISOString() })}\n`, { mode: 0o600 });
  return () => rmSync(file, { force: true });
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** The daemons running now, oldest first. */
export function runningDaemons(env = process.env): RunningDaemon[] {
  const dir = ownDir(runtimeDir(env), false);
  if (!dir) return [];
  const out: RunningDaemon[] = [];
  for (const name of readdirSync(dir)) {
    if (!/^\d+\.json$/.test(name)) continue;
    try {
      const d = JSON.parse(readFileSync(join(dir, name), 'utf8')) as RunningDaemon;
      if (typeof d.db !== 'string' || typeof d.broker !== 'string' || !Number.isInteger(d.pid)) continue;
      if (alive(d.pid)) out.push(d);
      else rmSync(join(dir, name), { force: true });
    } catch {
      // half written, or not ours: skipped
    }
  }
  return out.sort((a, b) => a.startedAt.localeCompare(b.startedAt));
}
