// Server-sent events: `event: <name>` + `data: <json>` blocks on a
// text/event-stream response, a comment now and then so proxies keep the
// connection, and one hub that ends every open stream when the server stops.
//
// Backpressure: a stream whose client stops reading is dropped once the bytes
// waiting for it would pass `maxBufferedBytes`, so a stalled client costs the
// process at most that much. Streams opened with a token are counted per
// token (at most `maxStreamsPerToken`) and end as soon as the token is
// revoked: at once when revoked through this process's TokenStore, within
// `tokenCheckMs` when revoked by another process (the CLI).
import type { ServerResponse } from 'node:http';
import { silentLogger, type Logger } from '../log.js';
import { HttpError } from './errors.js';

export const HEARTBEAT_MS = 15_000;
export const DEFAULT_MAX_BUFFERED_BYTES = 1024 * 1024;
export const DEFAULT_MAX_STREAMS_PER_TOKEN = 8;
export const TOKEN_CHECK_MS = 1000;

export interface SseHubOptions {
  heartbeatMs?: number;
  /** Drop a client once this many bytes wait for it (http.events.maxBufferedBytes). */
  maxBufferedBytes?: number;
  /** Open streams one token may hold (http.events.maxStreamsPerToken). */
  maxStreamsPerToken?: number;
  /** Is this token still valid? Asked every tokenCheckMs for the tokens of open streams. */
  tokenActive?: (name: string) => boolean;
  tokenCheckMs?: number;
  log?: Logger;
}

/** Who a stream is for: the principal, and the token it came with (none when auth is off). */
export interface StreamOwner {
  principal: string;
  token?: string;
  /** false: not counted against maxStreamsPerToken (a prompt's stream, which ends with its turn); still ends on revocation. */
  counted?: boolean;
}

export class SseStream {
  private ended = false;
  private readonly closers: Array<() => void> = [];

  constructor(
    private readonly res: ServerResponse,
    private readonly hub?: SseHub,
    readonly owner?: StreamOwner,
  ) {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      // nginx and friends: do not buffer the stream.
      'x-accel-buffering': 'no',
    });
    res.socket?.setNoDelay(true);
    res.flushHeaders();
    res.on('close', () => this.closed());
    hub?.add(this);
  }

  /** The client went away or the stream was ended. */
  get open(): boolean {
    return !this.ended && !this.res.destroyed && !this.res.writableEnded;
  }

  /** Whether the client went away before end() (a disconnect, not a finished stream). */
  get clientGone(): boolean {
    return this.res.destroyed && !this.res.writableFinished;
  }

  /** Bytes written to this stream that the client has not taken yet. */
  get buffered(): number {
    return this.res.writableLength;
  }

  send(event: string, data: unknown): void {
    if (!this.open) return;
    const json = JSON.stringify(data) ?? 'null';
    // JSON.stringify never emits a raw newline, so one data line carries it.
    this.write(`event: ${event}\ndata: ${json}\n\n`);
  }

  comment(text: string): void {
    if (this.open) this.write(`: ${text.replace(/[\r\n]+/g, ' ')}\n\n`);
  }

  private write(chunk: string): void {
    const waiting = this.res.writableLength;
    // A client with bytes still waiting that would pass the cap has stopped reading: drop it
    // rather than hold an ever-growing buffer. (An empty buffer takes any one event.)
    if (this.hub && waiting > 0 && waiting + Buffer.byteLength(chunk) > this.hub.maxBufferedBytes) {
      this.hub.dropSlow(this, waiting);
      return;
    }
    this.res.write(chunk);
  }

  /** Called once when the client disconnects or the stream ends. */
  onClose(fn: () => void): void {
    if (this.ended) fn();
    else this.closers.push(fn);
  }

  end(): void {
    if (this.open) this.res.end();
    this.closed();
  }

  /** End it now, buffered bytes and all (a slow client, a revoked token). */
  destroy(): void {
    this.res.destroy();
    this.closed();
  }

  private closed(): void {
    if (this.ended) return;
    this.ended = true;
    this.hub?.delete(this);
    for (const fn of this.closers.splice(0)) {
      try {
        fn();
      } catch {
        // a closer's failure does not stop the others
      }
    }
  }
}

/** Every open stream of a server: heartbeats, caps, revocation, and ending them all on stop. */
export class SseHub {
  private readonly streams = new Set<SseStream>();
  private readonly byToken = new Map<string, Set<SseStream>>();
  private timer?: NodeJS.Timeout;
  private tokenTimer?: NodeJS.Timeout;
  private droppedCount = 0;
  private readonly heartbeatMs: number;
  readonly maxBufferedBytes: number;
  readonly maxStreamsPerToken: number;
  private readonly tokenActive?: (name: string) => boolean;
  private readonly tokenCheckMs: number;
  private readonly log: Logger;

  constructor(options: SseHubOptions = {}) {
    this.heartbeatMs = options.heartbeatMs ?? HEARTBEAT_MS;
    this.maxBufferedBytes = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
    this.maxStreamsPerToken = options.maxStreamsPerToken ?? DEFAULT_MAX_STREAMS_PER_TOKEN;
    this.tokenActive = options.tokenActive;
    this.tokenCheckMs = options.tokenCheckMs ?? TOKEN_CHECK_MS;
    this.log = options.log ?? silentLogger;
  }

  /**
   * Open a stream. With a token, refuses (429, before any byte is sent) when
   * the token holds maxStreamsPerToken streams already.
   */
  open(res: ServerResponse, owner?: StreamOwner): SseStream {
    if (owner?.token !== undefined && owner.counted !== false && this.countedFor(owner.token) >= this.maxStreamsPerToken) {
      throw new HttpError(
        429,
        'too_many_streams',
        `the token ${JSON.stringify(owner.token)} has ${this.maxStreamsPerToken} open event streams already, the most one token may hold ` +
          '(http.events.maxStreamsPerToken); close one first',
      );
    }
    return new SseStream(res, this, owner);
  }

  private countedFor(token: string): number {
    let n = 0;
    for (const s of this.byToken.get(token) ?? []) if (s.owner?.counted !== false) n++;
    return n;
  }

  add(stream: SseStream): void {
    this.streams.add(stream);
    const token = stream.owner?.token;
    if (token !== undefined) {
      let set = this.byToken.get(token);
      if (!set) this.byToken.set(token, (set = new Set()));
      set.add(stream);
      if (this.tokenActive && !this.tokenTimer) {
        this.tokenTimer = setInterval(() => this.checkTokens(), this.tokenCheckMs);
        this.tokenTimer.unref();
      }
    }
    if (!this.timer) {
      this.timer = setInterval(() => {
        for (const s of this.streams) s.comment('keep-alive');
      }, this.heartbeatMs);
      this.timer.unref();
    }
  }

  delete(stream: SseStream): void {
    this.streams.delete(stream);
    const token = stream.owner?.token;
    if (token !== undefined) {
      const set = this.byToken.get(token);
      set?.delete(stream);
      if (set && !set.size) this.byToken.delete(token);
      if (!this.byToken.size && this.tokenTimer) {
        clearInterval(this.tokenTimer);
        this.tokenTimer = undefined;
      }
    }
    if (!this.streams.size && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  /** @internal A stream's client stopped reading. */
  dropSlow(stream: SseStream, buffered: number): void {
    this.droppedCount++;
    this.log.warn(
      { principal: stream.owner?.principal, token: stream.owner?.token, buffered, maxBufferedBytes: this.maxBufferedBytes },
      'event stream dropped: the client stopped reading and its buffer passed http.events.maxBufferedBytes',
    );
    stream.destroy();
  }

  /** End every open stream of a token (it was revoked). */
  closeToken(name: string, why = 'the token was revoked'): number {
    const set = this.byToken.get(name);
    if (!set) return 0;
    const streams = [...set];
    this.log.info({ token: name, streams: streams.length }, `event streams closed: ${why}`);
    for (const s of streams) s.destroy();
    return streams.length;
  }

  private checkTokens(): void {
    for (const name of [...this.byToken.keys()]) {
      let active = true;
      try {
        active = this.tokenActive!(name);
      } catch (err) {
        this.log.warn({ err, token: name }, 'could not check an event stream token; the stream stays open');
      }
      if (!active) this.closeToken(name);
    }
  }

  get size(): number {
    return this.streams.size;
  }

  /** Open streams, the most bytes waiting for any one of them, and how many slow clients were dropped. */
  stats(): { open: number; maxBuffered: number; dropped: number } {
    let maxBuffered = 0;
    for (const s of this.streams) maxBuffered = Math.max(maxBuffered, s.buffered);
    return { open: this.streams.size, maxBuffered, dropped: this.droppedCount };
  }

  closeAll(): void {
    if (this.tokenTimer) clearInterval(this.tokenTimer);
    this.tokenTimer = undefined;
    for (const s of [...this.streams]) s.end();
  }
}
