// Whether a file another user could have made or could read may be trusted: it must be ours and 0600.
// Control files (the daemon's socket and descriptor) and the broker credential are read only so; the database,
// its side files and the audit's digest and sequence files are made so (makePrivate).
import { chmodSync, closeSync, lstatSync, openSync, statSync } from 'node:fs';

export class EndpointRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EndpointRefused';
  }
}

/**
 * A control file (socket or descriptor) another user could have made or could open
 * is not used: it must be ours and readable by us alone. Returns false when there is none.
 */
export function checkPrivate(path: string, what: 'socket' | 'file'): boolean {
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(path);
  } catch {
    return false;
  }
  if (what === 'socket' && !st.isSocket()) throw new EndpointRefused(`${path} is not a socket`);
  if (what === 'file' && !st.isFile()) throw new EndpointRefused(`${path} is not a regular file`);
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) throw new EndpointRefused(`${path} belongs to uid ${st.uid}, not to you (uid ${uid})`);
  if (process.platform !== 'win32' && (st.mode & 0o077) !== 0) {
    throw new EndpointRefused(`${path} has mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}; only 0600 (yours alone) is trusted`);
  }
  return true;
}

/**
 * Make a file ours alone (0600) when others could read or write it (an older Hearth wrote some 0644 under umask
 * 022). A missing file is fine. Throws what chmod throws otherwise.
 */
export function makePrivate(path: string): void {
  let mode: number;
  try {
    mode = statSync(path).mode;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (process.platform !== 'win32' && (mode & 0o077) !== 0) chmodSync(path, 0o600);
}

/** Create an empty file readable by us alone (whatever the umask), unless it exists. */
export function createPrivate(path: string): void {
  try {
    closeSync(openSync(path, 'wx', 0o600));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}
