// The client side of the control endpoint: find the daemon for a database, ask it
// one thing (or hand it a stream), and say how the command reached the home.
import { createConnection, type Socket } from 'node:net';
import { checkPrivate, endpointFor, EndpointRefused, readDescriptor } from './endpoint.js';
import { ControlError, type RpcRequest } from './protocol.js';

export class ControlClient {
  private buffered = '';
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private closedError?: Error;

  private constructor(
    readonly socket: Socket,
    /** Where it was reached, for --verbose. */
    readonly address: string,
  ) {
    socket.setEncoding('utf8');
    socket.on('data', this.onData);
    socket.on('error', (err) => this.fail(err));
    socket.on('close', () => this.fail(new Error('the daemon closed the connection')));
  }

  private readonly onData = (chunk: string) => {
    this.buffered += chunk;
    let nl: number;
    while ((nl = this.buffered.indexOf('\n')) >= 0) {
      const line = this.buffered.slice(0, nl);
      this.buffered = this.buffered.slice(nl + 1);
      if (!line.trim()) continue;
      let msg: { id?: number; result?: unknown; error?: { code: number; message: string } };
      try {
        msg = JSON.parse(line) as typeof msg;
      } catch {
        this.fail(new Error(`the daemon sent something that is not JSON: ${line.slice(0, 80)}`));
        return;
      }
      const w = typeof msg.id === 'number' ? this.waiting.get(msg.id) : undefined;
      if (!w) continue;
      this.waiting.delete(msg.id!);
      if (msg.error) w.reject(new ControlError(msg.error.code, msg.error.message));
      else w.resolve(msg.result);
    }
  };

  private fail(err: Error): void {
    this.closedError ??= err;
    for (const w of this.waiting.values()) w.reject(err);
    this.waiting.clear();
  }

  /**
   * Connect to the daemon for this database. undefined: there is none (nothing there,
   * or nothing answers). Throws EndpointRefused when what is there is not to be trusted.
   */
  static async connect(dbPath: string): Promise<ControlClient | undefined> {
    const endpoint = endpointFor(dbPath);
    if (!endpoint) return undefined;
    if (endpoint.socket && checkPrivate(endpoint.socket, 'socket')) {
      const socket = await open(() => createConnection(endpoint.socket!));
      return socket && new ControlClient(socket, endpoint.socket);
    }
    const d = readDescriptor(endpoint.descriptor);
    if (!d) return undefined;
    const socket = await open(() => createConnection(d.port, '127.0.0.1'));
    if (!socket) return undefined;
    const client = new ControlClient(socket, `127.0.0.1:${d.port}`);
    await client.call('hello', { token: d.token });
    return client;
  }

  call<T = unknown>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    if (this.closedError) return Promise.reject(this.closedError);
    const id = this.nextId++;
    const request: RpcRequest = { jsonrpc: '2.0', id, method, params };
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.socket.write(`${JSON.stringify(request)}\n`);
    });
  }

  /**
   * Ask for a stream; once answered, the raw socket carries it (the client stops
   * reading lines). `leftover`: what came after the answer, the stream's first text.
   */
  async stream<A = unknown>(method: string, params: Record<string, unknown> = {}): Promise<{ socket: Socket; leftover: string; answer: A }> {
    const answer = await this.call<A>(method, params);
    this.socket.off('data', this.onData);
    this.socket.removeAllListeners('close');
    const leftover = this.buffered;
    this.buffered = '';
    return { socket: this.socket, leftover, answer };
  }

  close(): void {
    this.socket.end();
    this.socket.unref();
  }
}

function open(make: () => Socket): Promise<Socket | undefined> {
  return new Promise((resolve) => {
    const socket = make();
    socket.once('connect', () => {
      socket.removeAllListeners('error');
      resolve(socket);
    });
    // ENOENT/ECONNREFUSED: a socket file left by a daemon that stopped.
    socket.once('error', () => resolve(undefined));
  });
}

export { EndpointRefused };
