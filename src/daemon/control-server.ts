// The daemon's control endpoint: the home's own processes (the CLI, `hearth mcp`)
// ask the running Hearth instead of building one of their own. A Unix socket
// beside the database, mode 0600 in a file owned by the user; or loopback TCP
// with a token from a 0600 descriptor file where sockets are unavailable.
import { randomBytes } from 'node:crypto';
import { chmodSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import type { Logger } from '../log.js';
import { checkPrivate, EndpointRefused, readDescriptor, type Endpoint } from './endpoint.js';
import { jsonDepth, MAX_BODY_DEPTH } from '../util/bounded-json.js';
import {
  ControlError,
  INTERNAL_ERROR,
  INVALID_PARAMS,
  INVALID_REQUEST,
  MAX_LINE_BYTES,
  METHOD_NOT_FOUND,
  PARSE_ERROR,
  UNAUTHORIZED,
  type RpcRequest,
} from './protocol.js';
import { checkParams } from './schema.js';

export type ControlMethod = (params: Record<string, unknown>) => Promise<unknown> | unknown;
/**
 * A method that takes the connection over after answering (MCP over the socket, the chat): it checks what it
 * needs first (a ControlError is the answer), answers, then gets the socket.
 */
export type ControlStream = (params: Record<string, unknown>) => Promise<{ answer: unknown; run: (socket: Socket, leftover: Buffer) => Promise<void> | void }>;

export interface ControlServerOptions {
  endpoint: Endpoint;
  methods: Record<string, ControlMethod>;
  streams?: Record<string, ControlStream>;
  log: Logger;
}

export class ControlServerError extends Error {}

export class ControlServer {
  private constructor(
    private readonly server: Server,
    private readonly options: ControlServerOptions,
    /** Where clients reach it: the socket path or `127.0.0.1:<port>`. */
    readonly address: string,
    private readonly token: string | undefined,
  ) {}

  static async start(options: ControlServerOptions): Promise<ControlServer> {
    const { endpoint, log } = options;
    if (endpoint.socket) {
      ControlServer.checkFolder(endpoint.socket, log);
      await ControlServer.clearStale(endpoint.socket, log);
      const holder: { server?: ControlServer } = {};
      const server = createServer({ allowHalfOpen: true }, (s) => holder.server!.serve(s));
      // Made 0600 from the start: no moment where another user could connect.
      // (The bind happens inside listen(), synchronously, so the umask is put back at once.)
      const umask = process.umask(0o177);
      let listening: Promise<void>;
      try {
        listening = new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(endpoint.socket, () => resolve());
        });
      } finally {
        process.umask(umask);
      }
      await listening;
      chmodSync(endpoint.socket, 0o600);
      holder.server = new ControlServer(server, options, endpoint.socket, undefined);
      return holder.server;
    }
    await ControlServer.clearStaleDescriptor(endpoint.descriptor, log);
    const token = randomBytes(24).toString('hex');
    const holder: { server?: ControlServer } = {};
    const server = createServer({ allowHalfOpen: true }, (s) => holder.server!.serve(s));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const port = (server.address() as { port: number }).port;
    rmSync(endpoint.descriptor, { force: true });
    writeFileSync(endpoint.descriptor, JSON.stringify({ port, token, pid: process.pid }), { mode: 0o600 });
    holder.server = new ControlServer(server, options, `127.0.0.1:${port}`, token);
    return holder.server;
  }

  /**
   * A socket file left by a stopped daemon is removed; one a daemon answers on means
   * this database already has its daemon; one with the wrong owner or mode is not ours
   * to trust, so it is replaced.
   */
  private static async clearStale(path: string, log: Logger): Promise<void> {
    try {
      if (!checkPrivate(path, 'socket')) return;
    } catch (err) {
      if (!(err instanceof EndpointRefused)) throw err;
      log.warn({ err }, 'control socket: a file with the wrong owner or mode was in the way; replacing it');
      rmSync(path, { force: true });
      return;
    }
    const answered = await new Promise<boolean>((resolve) => {
      const probe = createConnection(path);
      probe.once('connect', () => {
        probe.destroy();
        resolve(true);
      });
      probe.once('error', () => resolve(false));
    });
    if (answered) throw new ControlServerError(`another hearth daemon is already running for this database (its control socket ${path} answers)`);
    rmSync(path, { force: true });
  }

  /** A descriptor whose daemon still runs (its pid alive, its port answering) means this database has one. */
  private static async clearStaleDescriptor(path: string, log: Logger): Promise<void> {
    let d: ReturnType<typeof readDescriptor>;
    try {
      d = readDescriptor(path);
    } catch (err) {
      log.warn({ err }, 'control descriptor: an untrusted file was in the way; replacing it');
      rmSync(path, { force: true });
      return;
    }
    if (!d) return;
    let alive = false;
    try {
      process.kill(d.pid, 0);
      alive = d.pid !== process.pid;
    } catch {
      // no such process
    }
    const answers =
      alive &&
      (await new Promise<boolean>((resolve) => {
        const probe = createConnection(d.port, '127.0.0.1');
        probe.once('connect', () => {
          probe.destroy();
          resolve(true);
        });
        probe.once('error', () => resolve(false));
      }));
    if (answers) throw new ControlServerError(`another hearth daemon (pid ${d.pid}) is already running for this database (see ${path})`);
    rmSync(path, { force: true });
  }

  /** Others able to write the folder could replace the socket; clients check its owner and mode, but say so. */
  private static checkFolder(path: string, log: Logger): void {
    try {
      const st = statSync(dirname(path));
      const uid = process.getuid?.();
      if ((uid !== undefined && st.uid !== uid) || ((st.mode & 0o022) !== 0 && (st.mode & 0o1000) === 0)) {
        log.warn({ folder: dirname(path) }, "control socket: its folder is not yours alone; commands still check the socket's owner and mode before using it");
      }
    } catch {
      // the folder was just created by the database; nothing to say
    }
  }

  private readonly sockets = new Set<Socket>();

  private serve(socket: Socket): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    socket.on('error', (err) => this.options.log.debug({ err }, 'control connection error'));
    let authed = this.token === undefined;
    let buffered = Buffer.alloc(0);
    let line = 0;
    let busy = Promise.resolve();
    let streaming = false;
    // The client sent its last request: answer what is pending, then close our side too
    // (a stream closes it itself when it is done).
    socket.once('end', () => void busy.then(() => (streaming ? undefined : socket.end())));
    const tooLong = () => {
      this.reply(socket, null, undefined, new ControlError(INVALID_REQUEST, `request line ${line + 1} is longer than ${MAX_LINE_BYTES} bytes; closing`));
      socket.off('data', onData);
      socket.end();
    };
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      let nl: number;
      while ((nl = buffered.indexOf(0x0a)) >= 0) {
        if (nl > MAX_LINE_BYTES) return tooLong();
        const text = buffered.subarray(0, nl).toString('utf8');
        buffered = buffered.subarray(nl + 1);
        line++;
        if (!text.trim()) continue;
        const request = this.parse(text, line);
        if ('error' in request) {
          this.reply(socket, request.id ?? null, undefined, request.error);
          continue;
        }
        const stream = this.options.streams?.[request.method];
        if (stream) {
          // The rest of the connection belongs to the stream (answers still go in order).
          socket.off('data', onData);
          streaming = true;
          const leftover = buffered;
          busy = busy.then(async () => {
            if (!authed) {
              this.reply(socket, request.id ?? null, undefined, new ControlError(UNAUTHORIZED, 'send "hello" with the token first'));
              return void socket.end();
            }
            let opened: Awaited<ReturnType<ControlStream>>;
            try {
              opened = await stream(checkParams(request.method, request.params ?? {}));
            } catch (err) {
              const e = err instanceof ControlError ? err : new ControlError(INTERNAL_ERROR, (err as Error).message);
              if (!(err instanceof ControlError)) this.options.log.error({ err, method: request.method }, 'control stream failed to open');
              this.reply(socket, request.id ?? null, undefined, e);
              return void socket.end();
            }
            this.reply(socket, request.id ?? null, opened.answer);
            try {
              await opened.run(socket, leftover);
            } catch (err) {
              this.options.log.warn({ err, method: request.method }, 'control stream failed');
              socket.destroy();
            }
          });
          return;
        }
        busy = busy.then(async () => {
          if (request.method === 'hello' && !authed) {
            authed = request.params?.token === this.token;
            if (!authed) return this.reply(socket, request.id ?? null, undefined, new ControlError(UNAUTHORIZED, 'wrong token'));
          }
          if (!authed) return this.reply(socket, request.id ?? null, undefined, new ControlError(UNAUTHORIZED, 'send "hello" with the token first'));
          await this.dispatch(socket, request);
        });
      }
      if (buffered.length > MAX_LINE_BYTES) tooLong();
    };
    socket.on('data', onData);
  }

  private parse(text: string, line: number): RpcRequest | { id?: RpcRequest['id']; error: ControlError } {
    if (jsonDepth(text, MAX_BODY_DEPTH) > MAX_BODY_DEPTH)
      return { error: new ControlError(PARSE_ERROR, `line ${line} nests deeper than ${MAX_BODY_DEPTH} levels`) };
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch (err) {
      return { error: new ControlError(PARSE_ERROR, `line ${line} is not JSON: ${(err as Error).message}`) };
    }
    if (!v || typeof v !== 'object' || Array.isArray(v))
      return { error: new ControlError(INVALID_REQUEST, `line ${line}: a request is a JSON object {"jsonrpc":"2.0","id":1,"method":"...","params":{}}`) };
    const r = v as Record<string, unknown>;
    const id = typeof r.id === 'string' || typeof r.id === 'number' ? r.id : null;
    if (r.jsonrpc !== '2.0') return { id, error: new ControlError(INVALID_REQUEST, `line ${line}: "jsonrpc" must be "2.0"`) };
    if (typeof r.method !== 'string' || !r.method) return { id, error: new ControlError(INVALID_REQUEST, `line ${line}: "method" must be a non-empty string`) };
    if (r.params !== undefined && (!r.params || typeof r.params !== 'object' || Array.isArray(r.params))) {
      return { id, error: new ControlError(INVALID_PARAMS, `line ${line}: "params" must be an object`) };
    }
    return { jsonrpc: '2.0', id, method: r.method, params: r.params as Record<string, unknown> | undefined };
  }

  private async dispatch(socket: Socket, request: RpcRequest): Promise<void> {
    const method = this.options.methods[request.method];
    if (!method) {
      const known = [...Object.keys(this.options.methods), ...Object.keys(this.options.streams ?? {})].sort().join(', ');
      return this.reply(
        socket,
        request.id ?? null,
        undefined,
        new ControlError(METHOD_NOT_FOUND, `no method ${JSON.stringify(request.method)}; known: ${known}`),
      );
    }
    try {
      this.reply(socket, request.id ?? null, (await method(checkParams(request.method, request.params ?? {}))) ?? null);
    } catch (err) {
      if (err instanceof ControlError) return this.reply(socket, request.id ?? null, undefined, err);
      this.options.log.error({ err, method: request.method }, 'control request failed');
      this.reply(socket, request.id ?? null, undefined, new ControlError(INTERNAL_ERROR, (err as Error).message));
    }
  }

  private reply(socket: Socket, id: RpcRequest['id'], result: unknown, error?: ControlError): void {
    if (socket.destroyed || !socket.writable) return;
    const body = error ? { jsonrpc: '2.0', id, error: { code: error.code, message: error.message } } : { jsonrpc: '2.0', id, result };
    socket.write(`${JSON.stringify(body)}\n`);
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    if (this.options.endpoint.socket) rmSync(this.options.endpoint.socket, { force: true });
    else rmSync(this.options.endpoint.descriptor, { force: true });
  }
}
