// The Wyoming conversation service: Home Assistant's Wyoming integration (and
// any Wyoming client) adds Hearth as a conversation agent for its voice
// pipelines. `describe` answers `info` with a `handle` program; a `transcript`
// runs as a turn of an agent session for its satellite (the principal
// `voice:<name>` from `wyoming.satellites`, recognised by the connection's
// address, speaking from its area) and is answered with `handled` (the text to
// speak) or `not-handled` (with the reason, in words). With `streaming` on,
// the answer goes out as handled-start / handled-chunk / handled-stop instead
// (Home Assistant does not read those; it is off by default). Every transcript
// gets one terminal answer: a failed, refused or timed-out turn answers
// not-handled. A bad frame closes its connection with a log line, never more.
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Conversations } from '../agent/conversations.js';
import { ConfigError } from '../config/load.js';
import type { HearthConfig, WyomingSatellite } from '../config/schema.js';
import type { Hearth } from '../hearth.js';
import { silentLogger, type Logger } from '../log.js';
import type { Principal } from '../tools/types.js';
import { DEFAULT_FRAME_LIMITS, encodeEvent, FrameError, FrameReader, WYOMING_VERSION, type FrameLimits, type WyomingEvent } from './framing.js';

export interface WyomingServerOptions {
  hearth: Hearth;
  host?: string;
  /** 0: any free port (see `port` on the result). */
  port?: number;
  satellites: WyomingSatellite[];
  streaming?: boolean;
  turnTimeoutMs?: number;
  limits?: FrameLimits;
  maxConnections?: number;
  /** Close a connection silent for this long. Default 5 min. */
  idleMs?: number;
  log?: Logger;
}

const ATTRIBUTION = { name: 'Hearth', url: 'https://github.com/hearth-home/hearth' };
const MAX_TEXT = 2000;
const MAX_KEY = 200;
const IDLE_MS = 5 * 60_000;

/** `::ffff:127.0.0.1` -> `127.0.0.1`. */
function plainAddress(address: string | undefined): string {
  const a = (address ?? '').toLowerCase();
  return a.startsWith('::ffff:') && a.includes('.') ? a.slice(7) : a;
}

/** Refuse a satellite list start-up cannot make sense of (the schema checked the shapes). */
export function checkSatellites(satellites: WyomingSatellite[]): void {
  const seen = new Set<string>();
  satellites.forEach((s, i) => {
    if (seen.has(s.name.toLowerCase()))
      throw new ConfigError('config', `wyoming.satellites[${i}].name`, `${JSON.stringify(s.name)} is listed twice: each satellite needs a name of its own`);
    seen.add(s.name.toLowerCase());
  });
}

/** Text for a speaker: no markdown ticks. */
function speakable(text: string): string {
  return text.replace(/`/g, '').trim();
}

interface Connection {
  socket: Socket;
  address: string;
  /** Events are handled one at a time, in order. */
  queue: Promise<void>;
  closed: boolean;
}

export class WyomingServer {
  private readonly conversations: Conversations;
  private readonly log: Logger;
  private readonly connections = new Set<Connection>();
  private readonly aborts = new Set<AbortController>();
  private closing?: Promise<void>;
  readonly host: string;
  port = 0;

  private constructor(
    private readonly options: WyomingServerOptions,
    private readonly server: Server,
  ) {
    this.host = options.host ?? '127.0.0.1';
    this.log = options.log ?? silentLogger;
    this.conversations = new Conversations(options.hearth);
  }

  static async start(options: WyomingServerOptions): Promise<WyomingServer> {
    checkSatellites(options.satellites);
    const server = createServer();
    const wy = new WyomingServer(options, server);
    server.on('connection', (socket) => wy.accept(socket));
    server.on('error', (err) => wy.log.error({ err }, 'Wyoming server error'));
    await new Promise<void>((resolve, reject) => {
      const onError = (err: NodeJS.ErrnoException) => {
        const where = `${wy.host}:${options.port ?? 10700}`;
        reject(err.code === 'EADDRINUSE' ? new Error(`the Wyoming port ${where} is already in use: set wyoming.port`) : err);
      };
      server.once('error', onError);
      server.listen(options.port ?? 10700, wy.host, () => {
        server.off('error', onError);
        resolve();
      });
    });
    wy.port = (server.address() as AddressInfo).port;
    wy.log.info({ host: wy.host, port: wy.port, satellites: options.satellites.map((s) => s.name) }, 'Wyoming conversation service listening');
    return wy;
  }

  /** Stop listening, interrupt running turns, close connections. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
      for (const a of this.aborts) a.abort();
      for (const c of this.connections) c.socket.end();
      const force = setTimeout(() => {
        for (const c of this.connections) c.socket.destroy();
      }, 2000);
      force.unref();
      await closed;
      clearTimeout(force);
    })();
    return this.closing;
  }

  /** The satellites configured for an address. */
  satellitesAt(address: string): WyomingSatellite[] {
    const a = plainAddress(address);
    return this.options.satellites.filter((s) => plainAddress(s.address) === a);
  }

  private accept(socket: Socket): void {
    const max = this.options.maxConnections ?? 64;
    const address = plainAddress(socket.remoteAddress);
    if (this.connections.size >= max) {
      this.log.warn({ address, max }, 'Wyoming: too many connections; this one is closed');
      socket.destroy();
      return;
    }
    socket.setNoDelay(true);
    // A connection that says nothing for this long gives its slot back.
    socket.setTimeout(this.options.idleMs ?? IDLE_MS, () => {
      this.log.debug({ address }, 'Wyoming: idle connection closed');
      socket.destroy();
    });
    const conn: Connection = { socket, address, queue: Promise.resolve(), closed: false };
    this.connections.add(conn);
    const reader = new FrameReader(this.options.limits ?? DEFAULT_FRAME_LIMITS);
    socket.on('data', (chunk: Buffer) => {
      if (conn.closed) return;
      let events: WyomingEvent[];
      try {
        events = reader.push(chunk);
      } catch (err) {
        // Nothing a peer sends may take the process down: whatever it was, this connection ends.
        if (err instanceof FrameError) this.log.warn({ err, address }, 'Wyoming: bad frame; connection closed');
        else this.log.error({ err, address }, 'Wyoming: reading a frame failed; connection closed');
        conn.closed = true;
        socket.destroy();
        return;
      }
      for (const event of events) {
        conn.queue = conn.queue
          .then(() => this.handle(conn, event))
          .catch((err: unknown) => this.log.error({ err, address, type: event.type }, 'Wyoming: handling an event failed'));
      }
    });
    socket.on('error', (err) => this.log.debug({ err, address }, 'Wyoming: connection error'));
    socket.on('close', () => {
      conn.closed = true;
      this.connections.delete(conn);
    });
  }

  private send(conn: Connection, type: string, data?: Record<string, unknown>): void {
    if (conn.closed || conn.socket.destroyed) return;
    conn.socket.write(encodeEvent({ type, ...(data ? { data } : {}) }));
  }

  private info() {
    const description = "Hearth, the home's agent: controls and reads the home's devices under Hearth's policy, with approvals and an audit log";
    return {
      asr: [],
      tts: [],
      wake: [],
      intent: [],
      handle: [
        {
          name: 'hearth',
          attribution: ATTRIBUTION,
          installed: true,
          description,
          version: WYOMING_VERSION,
          models: [{ name: 'hearth', attribution: ATTRIBUTION, installed: true, description, version: WYOMING_VERSION, languages: ['en'] }],
          supports_handled_streaming: this.options.streaming ?? false,
        },
      ],
    };
  }

  private async handle(conn: Connection, event: WyomingEvent): Promise<void> {
    switch (event.type) {
      case 'describe':
        this.send(conn, 'info', this.info());
        return;
      case 'ping':
        this.send(conn, 'pong', typeof event.data.text === 'string' ? { text: event.data.text } : {});
        return;
      case 'transcript':
        await this.transcript(conn, event);
        return;
      default:
        // Audio and other services' events are not Hearth's: ignored, as a peer would.
        this.log.debug({ type: event.type, address: conn.address }, 'Wyoming: event ignored');
    }
  }

  /** The satellite a transcript speaks for: by address, then (several at one address) by the name the client gives. */
  private satelliteFor(conn: Connection, context: Record<string, unknown>): WyomingSatellite | undefined {
    const here = this.satellitesAt(conn.address);
    if (here.length <= 1) return here[0];
    const named = typeof context.satellite === 'string' ? context.satellite.toLowerCase() : undefined;
    return here.find((s) => s.name.toLowerCase() === named) ?? here[0];
  }

  private async transcript(conn: Connection, event: WyomingEvent): Promise<void> {
    const started = performance.now();
    const raw = event.data.context;
    const context = raw && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
    const conversationId = typeof context.conversation_id === 'string' && context.conversation_id.length <= MAX_KEY ? context.conversation_id : undefined;
    const answerContext = conversationId ? { conversation_id: conversationId } : undefined;
    const notHandled = (text: string, why: string) => {
      this.log.info({ address: conn.address, why, ms: Math.round(performance.now() - started) }, 'Wyoming: not handled');
      this.send(conn, 'not-handled', { text, ...(answerContext ? { context: answerContext } : {}) });
    };
    const text = event.data.text;
    if (typeof text !== 'string' || text.trim() === '') return notHandled('I did not hear anything to act on.', 'empty transcript');
    if (text.length > MAX_TEXT) return notHandled('That was too long for me to act on.', `transcript of ${text.length} characters`);
    const satellite = this.satelliteFor(conn, context);
    if (!satellite) {
      this.log.warn({ address: conn.address }, 'Wyoming: a transcript from an address that is no configured satellite (wyoming.satellites); refused');
      return notHandled(
        `This device is not one of Hearth's satellites, so I cannot act for it. Add its address ${conn.address} to wyoming.satellites.`,
        'unknown satellite',
      );
    }
    const id = `voice:${satellite.name}`;
    const principal: Principal = { id, roles: this.options.hearth.policy.rolesOf(id), ...(satellite.area ? { area: satellite.area } : {}) };
    const abort = new AbortController();
    this.aborts.add(abort);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      abort.abort();
    }, this.options.turnTimeoutMs ?? 30_000);
    // The client went away: stop the turn nobody will hear.
    const onClose = () => abort.abort();
    conn.socket.once('close', onClose);
    const streaming = this.options.streaming ?? false;
    let streamStarted = false;
    let streamed = '';
    try {
      const answer = await this.conversations.turn({
        principal,
        ...(conversationId ? { key: conversationId } : {}),
        text,
        signal: abort.signal,
        ...(streaming
          ? {
              onEvent: (e) => {
                if (e.type === 'step') streamed = '';
                if (e.type !== 'token' || !e.text) return;
                if (!streamStarted) {
                  streamStarted = true;
                  this.send(conn, 'handled-start', answerContext ? { context: answerContext } : {});
                }
                streamed += e.text;
                this.send(conn, 'handled-chunk', { text: e.text.replace(/`/g, '') });
              },
            }
          : {}),
      });
      const ms = Math.round(performance.now() - started);
      if (timedOut) {
        if (streamStarted) return this.stopStream(conn, ' I stopped: that took too long.');
        return notHandled('That took too long, so I stopped.', `timed out after ${this.options.turnTimeoutMs ?? 30_000} ms`);
      }
      if (answer.result.stopReason !== 'completed') {
        const why = answer.result.error ?? answer.result.stopReason;
        if (streamStarted) return this.stopStream(conn, ` Something went wrong: ${why}`);
        return notHandled(`Sorry, I could not do that: ${why}`, `turn ${answer.result.stopReason}: ${why}`);
      }
      this.log.info(
        { satellite: satellite.name, area: satellite.area, ms, calls: answer.summary.toolCalls.length, auditIds: answer.summary.auditIds },
        'Wyoming: handled',
      );
      if (streaming && streamStarted) {
        return this.stopStream(conn, streamed.trim() && answer.approvalText ? ` ${answer.approvalText}` : streamed.trim() ? '' : answer.text);
      }
      const spoken = speakable(answer.text) || 'Done.';
      if (streaming) {
        this.send(conn, 'handled-start', answerContext ? { context: answerContext } : {});
        return this.stopStream(conn, spoken);
      }
      this.send(conn, 'handled', { text: spoken, ...(answerContext ? { context: answerContext } : {}) });
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'turn_active') return notHandled('I am still working on your last request.', 'turn_active');
      this.log.error({ err, satellite: satellite.name }, 'Wyoming: a turn failed');
      if (streamStarted) return this.stopStream(conn, ' Something went wrong.');
      return notHandled(`Sorry, I could not do that: ${err instanceof Error ? err.message : String(err)}`, 'error');
    } finally {
      clearTimeout(timer);
      this.aborts.delete(abort);
      conn.socket.off('close', onClose);
    }
  }

  private stopStream(conn: Connection, rest: string): void {
    const text = rest.replace(/`/g, '');
    if (text.trim()) this.send(conn, 'handled-chunk', { text });
    this.send(conn, 'handled-stop');
  }
}

/** `hearth start`: serve Wyoming when `wyoming.port` is set (else undefined). */
export async function startWyomingFromConfig(hearth: Hearth, config: HearthConfig, log: Logger): Promise<WyomingServer | undefined> {
  const w = config.wyoming;
  if (w.port === undefined) return undefined;
  if (!w.satellites.length) log.warn('wyoming.port is set but wyoming.satellites is empty: every transcript will be answered not-handled');
  return WyomingServer.start({ hearth, host: w.host, port: w.port, satellites: w.satellites, streaming: w.streaming, turnTimeoutMs: w.turnTimeoutMs, log });
}
