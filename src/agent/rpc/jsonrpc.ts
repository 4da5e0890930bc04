// Newline-delimited JSON-RPC 2.0 over a pair of streams, as the Jan kit's
// runtime speaks it (`jan cli agent rpc`): one JSON value per line, UTF-8,
// requests carry `id`, notifications do not. Used by both ends: the protocol
// server (`hearth agent rpc`) and the client that drives a runtime (the jan
// engine). A line over the size limit is skipped and answered with an error,
// never buffered without bound; a line that is not JSON gets -32700.
import type { Readable, Writable } from 'node:stream';
import { silentLogger, type Logger } from '../../log.js';
import { errorOf } from '../../util/error.js';

export const PROTOCOL_VERSION = 1;
/** Longest line either end accepts (the kit's `max_line_bytes`). */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;
/** How much of an offending input an error message may echo (the kit's `max_echo_bytes`). */
export const MAX_ECHO_BYTES = 4096;

export const ErrorCodes = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  /** A turn is already running in the session (retryable). */
  TURN_ACTIVE: -32001,
  /** `initialize` + `initialized` have not happened yet. */
  NOT_INITIALIZED: -32002,
} as const;

export type RpcId = string | number;

/** A JSON-RPC error, thrown by handlers and raised by `request()` when the peer answers with one. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'RpcError';
  }

  /** `data.kind`, when the error carries one (`invalid_tools`, `not_pending`, `turn_active`...). */
  get kind(): string | undefined {
    const d = this.data as { kind?: unknown } | undefined;
    return d && typeof d === 'object' && typeof d.kind === 'string' ? d.kind : undefined;
  }

  toJSON(): { code: number; message: string; data?: unknown } {
    return { code: this.code, message: this.message, ...(this.data !== undefined ? { data: this.data } : {}) };
  }
}

/** -32602 with a `data.kind`, the protocol's way of saying which rule a parameter broke. */
export function invalidParams(message: string, kind = 'invalid_params', extra: Record<string, unknown> = {}): RpcError {
  return new RpcError(ErrorCodes.INVALID_PARAMS, message, { kind, ...extra });
}

/** Cut text for an error message to the echo limit (by bytes, on a character boundary). */
export function echo(text: string, maxBytes = MAX_ECHO_BYTES): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  let out = Buffer.from(text).subarray(0, maxBytes).toString('utf8');
  if (out.endsWith('\uFFFD')) out = out.slice(0, -1);
  return `${out}...`;
}

// ------------------------------------------------------------------ line framing

export interface LineReaderHandlers {
  line(text: string): void;
  /** A line longer than the limit was skipped (its bytes are dropped as they arrive). */
  oversize(bytes: number): void;
  end(): void;
}

/**
 * Split a byte stream into lines without holding more than `maxLineBytes` of
 * any one line. `\r\n` ends a line too. A last line without its newline is
 * delivered at the end of the stream.
 */
export function readLines(input: Readable, maxLineBytes: number, handlers: LineReaderHandlers): () => void {
  let parts: Buffer[] = [];
  let size = 0;
  let skipping = false;
  let skipped = 0;
  let ended = false;

  const emit = (buf: Buffer) => {
    let text = buf.toString('utf8');
    if (text.endsWith('\r')) text = text.slice(0, -1);
    if (text.trim() === '') return;
    handlers.line(text);
  };

  const onData = (chunk: Buffer | string) => {
    let buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    while (buf.length) {
      const nl = buf.indexOf(0x0a);
      const piece = nl === -1 ? buf : buf.subarray(0, nl);
      if (skipping) {
        skipped += piece.length;
      } else if (size + piece.length > maxLineBytes) {
        skipping = true;
        skipped = size + piece.length;
        parts = [];
        size = 0;
      } else if (piece.length) {
        parts.push(piece);
        size += piece.length;
      }
      if (nl === -1) return;
      // End of a line.
      if (skipping) {
        skipping = false;
        handlers.oversize(skipped);
        skipped = 0;
      } else {
        const line = parts.length === 1 ? parts[0] : Buffer.concat(parts, size);
        parts = [];
        size = 0;
        emit(line);
      }
      buf = buf.subarray(nl + 1);
    }
  };
  const onEnd = () => {
    if (ended) return;
    ended = true;
    if (skipping) handlers.oversize(skipped);
    else if (size) emit(Buffer.concat(parts, size));
    parts = [];
    handlers.end();
  };
  input.on('data', onData);
  input.on('end', onEnd);
  input.on('close', onEnd);
  input.on('error', onEnd);
  return () => {
    input.off('data', onData);
    input.off('end', onEnd);
    input.off('close', onEnd);
    input.off('error', onEnd);
  };
}

// ------------------------------------------------------------------ the peer

/** A handler's result, with something to do once the response line is written (e.g. release held notifications). */
export class Reply<T = unknown> {
  constructor(
    readonly result: T,
    readonly afterWrite: () => void,
  ) {}
}

export type RequestHandler = (method: string, params: unknown, id: RpcId) => unknown;
export type NotificationHandler = (method: string, params: unknown) => void;

export interface JsonRpcPeerOptions {
  input: Readable;
  output: Writable;
  /** Incoming requests; return (or resolve) the result, throw an RpcError to answer with an error. */
  onRequest?: RequestHandler;
  onNotification?: NotificationHandler;
  /** Longest incoming line. Default 16 MiB. */
  maxLineBytes?: number;
  log?: Logger;
  /** Longest outgoing line `request()` / `notify()` will write. Default: unlimited (the peer's own limit is its business). */
  maxOutgoingLineBytes?: number;
}

interface Pending {
  method: string;
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
  timer?: NodeJS.Timeout;
}

/**
 * One end of a JSON-RPC connection. Both directions at once: it answers the
 * other side's requests and sends its own. `closed` resolves when the input
 * ends; requests still waiting then reject.
 */
export class JsonRpcPeer {
  private nextId = 1;
  private readonly pending = new Map<RpcId, Pending>();
  private isClosed = false;
  private closeReason = 'the connection is closed';
  private readonly log: Logger;
  private readonly stopReading: () => void;
  readonly closed: Promise<void>;
  private resolveClosed!: () => void;
  maxOutgoingLineBytes: number;

  constructor(private readonly o: JsonRpcPeerOptions) {
    this.log = o.log ?? silentLogger;
    this.maxOutgoingLineBytes = o.maxOutgoingLineBytes ?? Number.POSITIVE_INFINITY;
    this.closed = new Promise((resolve) => (this.resolveClosed = resolve));
    this.stopReading = readLines(o.input, o.maxLineBytes ?? MAX_LINE_BYTES, {
      line: (text) => this.onLine(text),
      oversize: (bytes) => {
        this.log.warn({ bytes, max: o.maxLineBytes ?? MAX_LINE_BYTES }, 'rpc: skipped a line over the size limit');
        this.send({
          jsonrpc: '2.0',
          id: null,
          error: {
            code: ErrorCodes.INVALID_REQUEST,
            message: `line of ${bytes} bytes is over the limit of ${o.maxLineBytes ?? MAX_LINE_BYTES} bytes; it was skipped`,
            data: { kind: 'line_too_long', max_line_bytes: o.maxLineBytes ?? MAX_LINE_BYTES },
          },
        });
      },
      end: () => this.close('the other side closed the connection'),
    });
    o.output.on('error', (err) => {
      this.log.debug({ err }, 'rpc: output failed');
      this.close(`cannot write to the other side: ${err.message}`);
    });
  }

  get isOpen(): boolean {
    return !this.isClosed;
  }

  /** Send a request and wait for its answer (an RpcError when the answer is an error). */
  request<T = unknown>(method: string, params?: unknown, options: { timeoutMs?: number } = {}): Promise<T> {
    if (this.isClosed) return Promise.reject(new Error(this.closeReason));
    const id = this.nextId++;
    const line = JSON.stringify({ jsonrpc: '2.0', id, method, ...(params !== undefined ? { params } : {}) });
    if (Buffer.byteLength(line) + 1 > this.maxOutgoingLineBytes) {
      return Promise.reject(
        new RpcError(ErrorCodes.INVALID_REQUEST, `${method}: the request is over the other side's line limit of ${this.maxOutgoingLineBytes} bytes`, {
          kind: 'line_too_long',
        }),
      );
    }
    return new Promise<T>((resolve, reject) => {
      const p: Pending = { method, resolve: resolve as (v: unknown) => void, reject };
      if (options.timeoutMs) {
        p.timer = setTimeout(() => {
          this.pending.delete(id);
          reject(new Error(`${method}: no answer within ${options.timeoutMs} ms`));
        }, options.timeoutMs);
      }
      this.pending.set(id, p);
      this.writeLine(line);
    });
  }

  notify(method: string, params?: unknown): void {
    if (this.isClosed) return;
    this.send({ jsonrpc: '2.0', method, ...(params !== undefined ? { params } : {}) });
  }

  /** Stop: reject what waits, stop reading. Does not end the output stream (stdout is not ours to end). */
  close(reason = 'the connection is closed'): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.closeReason = reason;
    this.stopReading();
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      if (p.timer) clearTimeout(p.timer);
      p.reject(new Error(reason));
    }
    this.resolveClosed();
  }

  private send(message: Record<string, unknown>): void {
    let line: string;
    try {
      line = JSON.stringify(message);
    } catch (err) {
      this.log.error({ err: errorOf(err) }, 'rpc: could not serialize a message');
      return;
    }
    this.writeLine(line);
  }

  private writeLine(line: string): void {
    if (this.o.output.destroyed || this.o.output.writableEnded) return;
    try {
      this.o.output.write(`${line}\n`);
    } catch (err) {
      this.log.debug({ err: errorOf(err) }, 'rpc: write failed');
    }
  }

  private onLine(text: string): void {
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch (err) {
      this.send({
        jsonrpc: '2.0',
        id: null,
        error: { code: ErrorCodes.PARSE_ERROR, message: `parse error: ${(err as Error).message}`, data: { kind: 'parse_error', line: echo(text, 256) } },
      });
      return;
    }
    if (Array.isArray(msg)) {
      this.send({ jsonrpc: '2.0', id: null, error: { code: ErrorCodes.INVALID_REQUEST, message: 'batches are not supported: send one message per line' } });
      return;
    }
    if (!msg || typeof msg !== 'object') {
      this.send({ jsonrpc: '2.0', id: null, error: { code: ErrorCodes.INVALID_REQUEST, message: 'a message must be a JSON object' } });
      return;
    }
    const m = msg as Record<string, unknown>;
    const hasId = 'id' in m && (typeof m.id === 'string' || typeof m.id === 'number');
    if (typeof m.method === 'string') {
      if ('id' in m && m.id !== null && !hasId) {
        this.send({ jsonrpc: '2.0', id: null, error: { code: ErrorCodes.INVALID_REQUEST, message: 'id must be a string or a number' } });
        return;
      }
      if (m.jsonrpc !== '2.0') {
        if (hasId) this.send({ jsonrpc: '2.0', id: m.id, error: { code: ErrorCodes.INVALID_REQUEST, message: 'jsonrpc must be "2.0"' } });
        return;
      }
      if (hasId) this.dispatchRequest(m.method, m.params, m.id as RpcId);
      else this.dispatchNotification(m.method, m.params);
      return;
    }
    // A response to one of ours.
    if (hasId && ('result' in m || 'error' in m)) {
      const p = this.pending.get(m.id as RpcId);
      if (!p) {
        this.log.debug({ id: m.id }, 'rpc: answer to no pending request');
        return;
      }
      this.pending.delete(m.id as RpcId);
      if (p.timer) clearTimeout(p.timer);
      if ('error' in m && m.error) {
        const e = m.error as { code?: unknown; message?: unknown; data?: unknown };
        p.reject(
          new RpcError(
            typeof e.code === 'number' ? e.code : ErrorCodes.INTERNAL_ERROR,
            typeof e.message === 'string' ? e.message : `${p.method} failed`,
            e.data,
          ),
        );
      } else p.resolve(m.result);
      return;
    }
    if ('error' in m) {
      // An error about no request in particular (a bad line of ours).
      this.log.warn({ error: m.error }, 'rpc: the other side reported an error');
      return;
    }
    if (hasId) this.send({ jsonrpc: '2.0', id: m.id, error: { code: ErrorCodes.INVALID_REQUEST, message: 'a request needs a method' } });
    else this.send({ jsonrpc: '2.0', id: null, error: { code: ErrorCodes.INVALID_REQUEST, message: 'not a request, notification or response' } });
  }

  /** Answer a request; a handler that returns at once is answered at once (replies keep the order of the lines). */
  private dispatchRequest(method: string, params: unknown, id: RpcId): void {
    if (!this.o.onRequest) {
      this.send({ jsonrpc: '2.0', id, error: { code: ErrorCodes.METHOD_NOT_FOUND, message: `unknown method ${JSON.stringify(echo(method, 128))}` } });
      return;
    }
    let out: unknown;
    try {
      out = this.o.onRequest(method, params, id);
    } catch (err) {
      this.sendError(method, id, err);
      return;
    }
    if (out && typeof (out as PromiseLike<unknown>).then === 'function') {
      (out as Promise<unknown>).then(
        (value) => this.sendResult(id, value),
        (err: unknown) => this.sendError(method, id, err),
      );
    } else this.sendResult(id, out);
  }

  private sendResult(id: RpcId, out: unknown): void {
    if (out instanceof Reply) {
      this.send({ jsonrpc: '2.0', id, result: out.result ?? null });
      out.afterWrite();
    } else this.send({ jsonrpc: '2.0', id, result: out ?? null });
  }

  private sendError(method: string, id: RpcId, err: unknown): void {
    if (err instanceof RpcError) {
      this.send({ jsonrpc: '2.0', id, error: err.toJSON() });
      return;
    }
    const message = err instanceof Error ? err.message : String(err);
    this.log.error({ method, err: message }, 'rpc: a request failed');
    this.send({ jsonrpc: '2.0', id, error: { code: ErrorCodes.INTERNAL_ERROR, message: echo(message) } });
  }

  private dispatchNotification(method: string, params: unknown): void {
    try {
      this.o.onNotification?.(method, params);
    } catch (err) {
      this.log.error({ method, err: errorOf(err) }, 'rpc: a notification handler failed');
    }
  }
}
