// Where a database's daemon listens, and whether a file found there may be trusted.
// The control socket sits beside the database (`hearth.db.sock`), so "a daemon for
// this database" needs no other lookup. Where a Unix socket cannot be made (Windows,
// a path longer than the socket limit) the daemon listens on loopback TCP instead and
// writes the port and a secret token to `hearth.db.control` (mode 0600).
import { readFileSync } from 'node:fs';
import { checkPrivate, EndpointRefused } from '../util/private-file.js';

export { checkPrivate, EndpointRefused };

/** sun_path is 108 bytes on Linux, 104 on macOS; keep under both. */
const SOCKET_PATH_MAX = 100;

export interface Endpoint {
  /** The Unix socket path, when this platform and path allow one. */
  socket?: string;
  /** The loopback descriptor file (port and token), the other way in. */
  descriptor: string;
}

export function endpointFor(dbPath: string): Endpoint | undefined {
  if (dbPath === ':memory:') return undefined;
  const socket = `${dbPath}.sock`;
  const usable = process.platform !== 'win32' && Buffer.byteLength(socket) <= SOCKET_PATH_MAX;
  return { ...(usable ? { socket } : {}), descriptor: `${dbPath}.control` };
}

export interface LoopbackDescriptor {
  port: number;
  token: string;
  pid: number;
}

export function readDescriptor(path: string): LoopbackDescriptor | undefined {
  if (!checkPrivate(path, 'file')) return undefined;
  let d: Partial<LoopbackDescriptor>;
  try {
    d = JSON.parse(readFileSync(path, 'utf8')) as Partial<LoopbackDescriptor>;
  } catch (err) {
    throw new EndpointRefused(`${path} is not JSON: ${(err as Error).message}`);
  }
  if (!Number.isInteger(d.port) || typeof d.token !== 'string' || d.token.length < 32) throw new EndpointRefused(`${path} has no port and token`);
  return { port: d.port!, token: d.token, pid: Number(d.pid) || 0 };
}
