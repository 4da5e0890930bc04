// Server-sent events: `event: <name>` + `data: <json>` blocks on a
// text/event-stream response, a comment now and then so proxies keep the
// connection, and one hub that ends every open stream when the server stops.
import type { ServerResponse } from 'node:http';

export const HEARTBEAT_MS = 15_000;

export class SseStream {
  private ended = false;
  private readonly closers: Array<() => void> = [];

  constructor(
    private readonly res: ServerResponse,
    private readonly hub?: SseHub,
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

  send(event: string, data: unknown): void {
    if (!this.open) return;
    const json = JSON.stringify(data) ?? 'null';
    // JSON.stringify never emits a raw newline, so one data line carries it.
    this.res.write(`event: ${event}\ndata: ${json}\n\n`);
  }

  comment(text: string): void {
    if (this.open) this.res.write(`: ${text.replace(/[\r\n]+/g, ' ')}\n\n`);
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

/** Every open stream of a server: heartbeats, and ending them all on stop. */
export class SseHub {
  private readonly streams = new Set<SseStream>();
  private timer?: NodeJS.Timeout;

  constructor(private readonly heartbeatMs = HEARTBEAT_MS) {}

  open(res: ServerResponse): SseStream {
    return new SseStream(res, this);
  }

  add(stream: SseStream): void {
    this.streams.add(stream);
    if (!this.timer) {
      this.timer = setInterval(() => {
        for (const s of this.streams) s.comment('keep-alive');
      }, this.heartbeatMs);
      this.timer.unref();
    }
  }

  delete(stream: SseStream): void {
    this.streams.delete(stream);
    if (!this.streams.size && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  get size(): number {
    return this.streams.size;
  }

  closeAll(): void {
    for (const s of [...this.streams]) s.end();
  }
}
