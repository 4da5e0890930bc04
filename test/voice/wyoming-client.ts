// A Wyoming client for the tests, written here from the protocol's public
// description (rhasspy/wyoming README: a JSON header line, then data_length
// bytes of JSON data, then payload_length bytes of payload), independently of
// src/wyoming/framing.ts so a mistake there is not mirrored here.
//
// The protocol tests drive the service with the real `wyoming` Python package
// (python-wyoming.ts); this one is for what only raw TCP shows (many idle
// connections, a chosen source address) and for `hearth start` end to end.
import { connect, type Socket } from 'node:net';

export interface ClientEvent {
  type: string;
  data: Record<string, unknown>;
  payload?: Buffer;
}

export class WyomingTestClient {
  private buffer = Buffer.alloc(0);
  private readonly events: ClientEvent[] = [];
  private waiters: Array<() => void> = [];
  closed = false;

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.parse();
      this.wake();
    });
    socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
    socket.on('error', () => undefined);
  }

  /** `localAddress`: the address the connection comes from (any 127.x.y.z on loopback). */
  static connect(port: number, host = '127.0.0.1', localAddress?: string): Promise<WyomingTestClient> {
    return new Promise((resolve, reject) => {
      const socket = connect({ port, host, ...(localAddress ? { localAddress } : {}) }, () => resolve(new WyomingTestClient(socket)));
      socket.once('error', reject);
    });
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const fn of w) fn();
  }

  private parse(): void {
    for (;;) {
      const nl = this.buffer.indexOf('\n');
      if (nl < 0) return;
      const header = JSON.parse(this.buffer.subarray(0, nl).toString('utf8')) as {
        type: string;
        data?: Record<string, unknown>;
        data_length?: number;
        payload_length?: number;
      };
      const dataLength = header.data_length ?? 0;
      const payloadLength = header.payload_length ?? 0;
      const start = nl + 1;
      if (this.buffer.length < start + dataLength + payloadLength) return;
      const data = { ...(header.data ?? {}), ...(dataLength ? JSON.parse(this.buffer.subarray(start, start + dataLength).toString('utf8')) : {}) };
      const payload = payloadLength ? this.buffer.subarray(start + dataLength, start + dataLength + payloadLength) : undefined;
      this.events.push({ type: header.type, data, ...(payload ? { payload } : {}) });
      this.buffer = this.buffer.subarray(start + dataLength + payloadLength);
    }
  }

  /** Send an event: data in the data section (as the Python library writes it). */
  send(type: string, data?: Record<string, unknown>, payload?: Buffer): void {
    const dataBytes = data ? Buffer.from(JSON.stringify(data), 'utf8') : undefined;
    const header = { type, version: '1.5.3', ...(dataBytes ? { data_length: dataBytes.length } : {}), ...(payload ? { payload_length: payload.length } : {}) };
    this.socket.write(Buffer.concat([Buffer.from(`${JSON.stringify(header)}\n`), ...(dataBytes ? [dataBytes] : []), ...(payload ? [payload] : [])]));
  }

  writeRaw(bytes: string | Buffer): void {
    this.socket.write(bytes);
  }

  /** The next event (of a type, if given: others before it are skipped and returned in `skipped`). */
  async next(type?: string, timeoutMs = 15_000): Promise<ClientEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = type ? this.events.findIndex((e) => e.type === type) : this.events.length ? 0 : -1;
      if (i >= 0) return this.events.splice(0, i + 1)[i];
      if (this.closed)
        throw new Error(`the connection closed before ${type ?? 'an event'} came; got: ${this.events.map((e) => e.type).join(', ') || 'nothing'}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${type ?? 'event'} within ${timeoutMs} ms; got: ${this.events.map((e) => e.type).join(', ') || 'nothing'}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** Events until (and with) one of these types. */
  async until(types: string[], timeoutMs = 15_000): Promise<ClientEvent[]> {
    const out: ClientEvent[] = [];
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const e = await this.next(undefined, Math.max(1, deadline - Date.now()));
      out.push(e);
      if (types.includes(e.type)) return out;
    }
  }

  /** Resolves when the server closes the connection. */
  async waitClosed(timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed) {
      if (Date.now() > deadline) throw new Error(`the connection stayed open for ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.max(1, deadline - Date.now()));
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  close(): void {
    this.socket.destroy();
  }
}
