// The running daemon says on its broker that it serves it: a retained message on `hearth/status` naming its
// host, database, control endpoint and page, `online` while it runs and `offline` (its last will, or said at a
// clean stop) after. A Hearth process elsewhere (another user, another machine) that would command the broker on
// its own reads it and refuses, naming the daemon's database, so every actuation lands in that home's audit.
// Only Hearth's own broker client may publish here (the embedded broker's gate, `hearth broker acl`).
import { hostname } from 'node:os';
import { parseBoundedJson } from '../util/bounded-json.js';

export const STATUS_TOPIC = 'hearth/status';

export interface DaemonStatus {
  state: 'online' | 'offline';
  host: string;
  pid: number;
  database: string;
  /** The control endpoint (a socket path on that host, or host:port), when it has one. */
  control: string | null;
  /** The page and HTTP API, when it serves one. */
  http: string | null;
  version: string;
  at: string;
}

export function statusPayload(s: Omit<DaemonStatus, 'host' | 'pid' | 'at'>): string {
  const full: DaemonStatus = { ...s, host: hostname(), pid: process.pid, at: new Date().toISOString() };
  return JSON.stringify(full);
}

/** A status as read off the broker: anything malformed is no status (and says nothing). */
export function parseStatus(payload: Buffer): DaemonStatus | undefined {
  if (payload.length > 4096) return undefined;
  let v: unknown;
  try {
    v = parseBoundedJson(payload.toString('utf8'), { maxChars: 4096, maxDepth: 4 });
  } catch {
    return undefined;
  }
  const s = v as Partial<DaemonStatus> | null;
  if (!s || typeof s !== 'object' || (s.state !== 'online' && s.state !== 'offline')) return undefined;
  if (typeof s.database !== 'string' || typeof s.host !== 'string' || typeof s.pid !== 'number') return undefined;
  return {
    state: s.state,
    host: s.host.slice(0, 200),
    pid: s.pid,
    database: s.database.slice(0, 1000),
    control: typeof s.control === 'string' ? s.control.slice(0, 1000) : null,
    http: typeof s.http === 'string' ? s.http.slice(0, 1000) : null,
    version: typeof s.version === 'string' ? s.version.slice(0, 40) : '?',
    at: typeof s.at === 'string' ? s.at.slice(0, 40) : '?',
  };
}

/** Whether the daemon a status names is this process's own home (same host, same database). */
export function isThisHome(s: DaemonStatus, database: string): boolean {
  return s.host === hostname() && s.database === database;
}
