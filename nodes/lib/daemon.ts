// A running Hearth daemon (`hearth start`) over its HTTP API, as the principal
// of a bearer token (`hearth token create node-red --role owner`). Policy,
// approvals, audit and tool names are then the daemon's: one across Node-RED,
// the CLI and the page. One event stream (GET /api/events) per bridge feeds
// state changes, audit rows and approvals; it reconnects after a drop and
// stops on a refused token. No Node-RED in here.
import { EventEmitter } from 'node:events';
import type { StateFeed, StateJson } from './state.js';

export class DaemonError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly body?: unknown,
  ) {
    super(message);
    this.name = 'DaemonError';
  }
}

export interface DaemonSettings {
  /** http://127.0.0.1:8787 */
  url: string;
  token: string;
  /** Shortest and longest wait before reconnecting the event stream. */
  retryMinMs?: number;
  retryMaxMs?: number;
}

export interface RemoteTool {
  name: string;
  description: string;
  capability: string;
  parameters: Record<string, unknown>;
  entities: string[];
  actions: string[];
}

export interface RemoteResult {
  text: string;
  isError: boolean;
  details: Record<string, unknown>;
}

export interface RemoteApproval {
  id: string;
  status: string;
  principal: string;
  tool: string;
  entityId?: string | null;
  args: Record<string, unknown>;
  decidedBy?: string | null;
  [key: string]: unknown;
}

/** One SSE block as its event name and JSON data; undefined for comments and what is not JSON. */
function parseSse(block: string): { event: string; data: unknown } | undefined {
  let event = 'message';
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue;
    if (line.startsWith('event: ')) event = line.slice(7);
    else if (line.startsWith('data: ')) data.push(line.slice(6));
  }
  if (!data.length) return undefined;
  try {
    return { event, data: JSON.parse(data.join('\n')) };
  } catch {
    return undefined; // not ours to read
  }
}

export type DaemonState = 'connecting' | 'connected' | 'disconnected' | 'error' | 'closed';

export interface DaemonEvents {
  state: [state: DaemonState, detail?: string];
  /** The stream's `ready`: who the token is. */
  ready: [info: { principal: string; entities: number }];
  change: [state: StateJson];
  audit: [row: Record<string, unknown>];
  approval: [event: RemoteApproval & { event: 'requested' | 'decided' }];
}

export class DaemonClient extends EventEmitter<DaemonEvents> {
  private current: DaemonState = 'connecting';
  private abort?: AbortController;
  private retryTimer?: NodeJS.Timeout;
  private retryMs: number;
  private closed = false;
  /** The token's principal, once the stream said. */
  principal?: string;
  readonly base: string;

  constructor(private readonly settings: DaemonSettings) {
    super();
    this.setMaxListeners(0);
    let url: URL;
    try {
      url = new URL(settings.url);
    } catch {
      throw new Error(`daemon URL ${JSON.stringify(settings.url)} is not a URL; e.g. http://127.0.0.1:8787 (hearth start prints it)`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`daemon URL must be http(s)://, got ${url.protocol}`);
    if (!settings.token) throw new Error('no token: create one with `hearth token create node-red --role owner` and put it in the bridge');
    this.base = url.toString().replace(/\/+$/, '');
    this.retryMs = settings.retryMinMs ?? 500;
  }

  get state(): DaemonState {
    return this.current;
  }

  private setState(state: DaemonState, detail?: string): void {
    if (state === this.current && !detail) return;
    this.current = state;
    this.emit('state', state, detail);
  }

  /** fetch, with a daemon that does not answer said in words (the URL and the cause). */
  private async send(method: string, path: string, init: { body?: unknown; accept: string; signal?: AbortSignal }): Promise<Response> {
    try {
      return await fetch(`${this.base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.settings.token}`,
          accept: init.accept,
          ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
        signal: init.signal ?? AbortSignal.timeout(60_000),
      });
    } catch (err) {
      if (init.signal?.aborted) throw err;
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const why = cause?.code ?? cause?.message ?? (err as Error).message;
      throw new DaemonError(`the hearth daemon at ${this.base} did not answer (${why}): is \`hearth start\` running?`, 0);
    }
  }

  /** A non-2xx answer as an error naming the request and the server's message (a refused token said so). */
  private async failure(method: string, path: string, res: Response): Promise<DaemonError> {
    const text = await res.text().catch(() => '');
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    const message = (json as { error?: { message?: string } } | undefined)?.error?.message ?? (text.slice(0, 200) || res.statusText);
    const refused = res.status === 401 ? ' (the daemon refused the token: create one with `hearth token create node-red --role owner`)' : '';
    return new DaemonError(`hearth daemon ${method} ${path}: ${res.status} ${message}${refused}`, res.status, json);
  }

  /** A JSON request; a non-2xx answer rejects with the server's message. */
  async request<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<T> {
    const res = await this.send(method, path, { body, accept: 'application/json' });
    if (!res.ok) throw await this.failure(method, path, res);
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return json as T;
  }

  /**
   * A POST answered as an event stream: every SSE event to `onEvent` (name and
   * parsed data) until the daemon ends the stream; aborting `signal` drops it.
   */
  async stream(path: string, body: unknown, onEvent: (event: string, data: unknown) => void, signal?: AbortSignal): Promise<void> {
    const res = await this.send('POST', path, { body, accept: 'text/event-stream', signal: signal ?? new AbortController().signal });
    if (!res.ok) throw await this.failure('POST', path, res);
    if (!res.body) throw new DaemonError(`hearth daemon POST ${path}: an empty answer`, res.status);
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const parsed = parseSse(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
        if (parsed) onEvent(parsed.event, parsed.data);
      }
    }
  }

  /** Open the event stream (again after a drop). */
  connect(): void {
    if (this.closed) return;
    this.abort = new AbortController();
    const signal = this.abort.signal;
    this.setState('connecting');
    fetch(`${this.base}/api/events`, { headers: { authorization: `Bearer ${this.settings.token}`, accept: 'text/event-stream' }, signal })
      .then(async (res) => {
        if (res.status === 401 || res.status === 403) {
          const text = await res.text().catch(() => '');
          // A refused token does not become good by asking again.
          this.setState('error', `the daemon refused the token (${res.status}): ${text.slice(0, 120)}`);
          return 'stop';
        }
        if (!res.ok || !res.body) throw new Error(`GET /api/events: ${res.status}`);
        await this.read(res.body);
        return 'ended';
      })
      .then(
        (how) => {
          if (how !== 'stop') this.retry('the event stream ended');
        },
        (err: Error) => {
          if (!signal.aborted) this.retry(err.message);
        },
      );
  }

  private retry(why: string): void {
    if (this.closed) return;
    this.setState('disconnected', why);
    const wait = this.retryMs;
    this.retryMs = Math.min(this.retryMs * 2, this.settings.retryMaxMs ?? 10_000);
    this.retryTimer = setTimeout(() => this.connect(), wait);
  }

  private async read(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        this.dispatch(block);
      }
    }
  }

  private dispatch(block: string): void {
    const parsed = parseSse(block);
    if (!parsed) return;
    const { event } = parsed;
    const payload = parsed.data as any;
    switch (event) {
      case 'ready':
        this.principal = payload.principal;
        this.retryMs = this.settings.retryMinMs ?? 500;
        this.setState('connected');
        this.emit('ready', payload);
        break;
      case 'state':
        this.emit('change', payload as StateJson);
        break;
      case 'audit':
        this.emit('audit', payload);
        break;
      case 'approval':
        this.emit('approval', payload);
        break;
    }
  }

  /** The token principal's states, as the daemon's read check lets it see them. */
  stateFeed(): StateFeed {
    return {
      snapshot: () => this.request<StateJson[]>('GET', '/api/devices'),
      subscribe: (fn) => {
        this.on('change', fn);
        return () => this.off('change', fn);
      },
    };
  }

  tools(): Promise<RemoteTool[]> {
    return this.request<RemoteTool[]>('GET', '/api/tools');
  }

  callTool(name: string, args: Record<string, unknown>): Promise<RemoteResult> {
    return this.request<RemoteResult>('POST', `/api/tools/${encodeURIComponent(name)}/call`, { args });
  }

  approval(id: string): Promise<RemoteApproval> {
    return this.request<RemoteApproval>('GET', `/api/approvals/${encodeURIComponent(id)}`);
  }

  approvals(status = 'pending'): Promise<RemoteApproval[]> {
    return this.request<RemoteApproval[]>('GET', `/api/approvals?status=${encodeURIComponent(status)}`);
  }

  decide(id: string, decision: 'grant' | 'deny'): Promise<RemoteApproval> {
    return this.request<RemoteApproval>('POST', `/api/approvals/${encodeURIComponent(id)}`, { decision });
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.abort?.abort();
    this.setState('closed');
  }
}
