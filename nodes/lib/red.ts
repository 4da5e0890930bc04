// The little of Node-RED's runtime API the Hearth nodes use, typed here so the
// package needs no @types/node-red (which lags behind Node-RED 4).

export interface NodeMessage {
  _msgid?: string;
  payload?: unknown;
  topic?: string;
  [key: string]: unknown;
}

export interface NodeStatus {
  fill?: 'red' | 'green' | 'yellow' | 'blue' | 'grey';
  shape?: 'ring' | 'dot';
  text?: string;
}

export type SendFn = (msg: NodeMessage | Array<NodeMessage | NodeMessage[] | null> | null) => void;
export type DoneFn = (err?: Error) => void;

export interface RedNode {
  id: string;
  type: string;
  name?: string;
  z?: string;
  credentials?: Record<string, string | undefined>;
  on(event: 'input', fn: (msg: NodeMessage, send: SendFn, done: DoneFn) => void | Promise<void>): void;
  on(event: 'close', fn: (removed: boolean, done: () => void) => void): void;
  send: SendFn;
  status(status: NodeStatus | Record<string, never>): void;
  log(msg: unknown): void;
  warn(msg: unknown): void;
  error(msg: unknown, originalMsg?: NodeMessage): void;
  debug(msg: unknown): void;
  trace(msg: unknown): void;
}

export interface RedNodeDef {
  id: string;
  type: string;
  name?: string;
  z?: string;
  [key: string]: unknown;
}

export interface RedLog {
  error(msg: unknown): void;
  warn(msg: unknown): void;
  info(msg: unknown): void;
  debug(msg: unknown): void;
  trace(msg: unknown): void;
}

export interface AdminRequest {
  params: Record<string, string>;
  query: Record<string, unknown>;
}

export interface AdminResponse {
  status(code: number): AdminResponse;
  json(body: unknown): void;
}

export interface RedApi {
  nodes: {
    createNode(node: object, def: RedNodeDef): void;
    registerType<N extends RedNode>(
      type: string,
      ctor: (this: N, def: RedNodeDef) => void,
      options?: { credentials?: Record<string, { type: 'text' | 'password' }> },
    ): void;
    getNode(id: string): unknown;
    eachNode(fn: (def: RedNodeDef) => void): void;
  };
  log: RedLog;
  settings: { userDir?: string; [key: string]: unknown };
  util: {
    cloneMessage<T>(msg: T): T;
    evaluateNodeProperty?(value: string, type: string, node: RedNode, msg: NodeMessage, callback: (err: Error | null, value: unknown) => void): unknown;
  };
  /** The editor's HTTP admin app (express); absent in some test runtimes. */
  httpAdmin?: {
    get(path: string, ...handlers: Array<(req: AdminRequest, res: AdminResponse, next: () => void) => void>): void;
  };
  auth?: {
    needsPermission(permission: string): (req: AdminRequest, res: AdminResponse, next: () => void) => void;
  };
  _(key: string, substitutions?: Record<string, unknown>): string;
}

/** `hearth-session.errors.noBridge` etc. The test helper's RED._ returns the key: keep texts readable anyway. */
export function t(RED: RedApi, key: string, fallback: string, subs?: Record<string, unknown>): string {
  const text = RED._(key, subs);
  if (text && text !== key) return text;
  return fallback.replace(/__(\w+)__/g, (_m, k: string) => String(subs?.[k] ?? ''));
}

/** Node settings arrive as strings from the editor: read them safely. */
export function str(def: RedNodeDef, key: string): string {
  const v = def[key];
  return typeof v === 'string' ? v.trim() : v === undefined || v === null ? '' : String(v);
}

export function bool(def: RedNodeDef, key: string, fallback = false): boolean {
  const v = def[key];
  if (typeof v === 'boolean') return v;
  if (v === 'true') return true;
  if (v === 'false') return false;
  return fallback;
}

export function num(def: RedNodeDef, key: string, fallback: number): number {
  const v = def[key];
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  return Number.isFinite(n) ? n : fallback;
}

export function list(value: string): string[] {
  return value
    .split(/[,\n]/)
    .map((s) => s.trim())
    .filter(Boolean);
}

export function errorOf(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
