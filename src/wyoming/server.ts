// The Wyoming conversation service: Home Assistant's Wyoming integration (and
// any Wyoming client) adds Hearth as a conversation agent for its voice
// pipelines. `describe` answers `info` with a `handle` program (it may control
// the home: supports_home_control; its version is Hearth's); a `transcript`
// runs as a turn of an agent session for its satellite and is answered with
// `handled` (the words to speak, for a person: spoken.ts) or `not-handled`
// (with the reason, in words): a sentence the agent did not understand is
// not-handled, so Home Assistant can let another agent try. With `streaming`
// on, the answer goes out as handled-start / handled-chunk / handled-stop
// instead (Home Assistant does not read those; it is off by default). Every
// transcript gets one terminal answer: a failed, refused or timed-out turn
// answers not-handled. A bad frame closes its connection with a log line,
// never more.
//
// Who speaks is decided by the connection, never by its words: the principal
// `voice:<name>` of the satellite configured for the connection's address
// (`wyoming.satellites`), speaking from that satellite's area. Several
// satellites may share an address (Home Assistant relaying them): at most one
// of them is the address's own; the others are chosen only by a client that
// proves which it is with that satellite's secret (context.satellite and
// context.satellite_secret). Connections from addresses that are no
// satellite's have a small pool of their own (describe, ping), so they never
// take a slot a satellite needs; a connection that sends no event within a few
// seconds is closed.
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Conversations } from '../agent/conversations.js';
import { ConfigError } from '../config/load.js';
import type { HearthConfig, WyomingSatellite } from '../config/schema.js';
import type { Hearth } from '../hearth.js';
import { silentLogger, type Logger } from '../log.js';
import type { Principal } from '../tools/types.js';
import { hearthVersion } from '../util/version.js';
import { DEFAULT_FRAME_LIMITS, encodeEvent, FrameError, FrameReader, type FrameLimits, type WyomingEvent } from './framing.js';

export interface WyomingServerOptions {
  hearth: Hearth;
  host?: string;
  /** 0: any free port (see `port` on the result). */
  port?: number;
  satellites: WyomingSatellite[];
  streaming?: boolean;
  turnTimeoutMs?: number;
  limits?: FrameLimits;
  /** Connections from satellites' addresses at once. Default 64. */
  maxConnections?: number;
  /** Connections from any other address at once (describe, ping): a pool of their own. Default 4. */
  maxStrangers?: number;
  /** Close a satellite's connection silent for this long. Default 5 min. */
  idleMs?: number;
  /** Close another address's connection silent for this long. Default 10 s. */
  strangerIdleMs?: number;
  /** Close a connection that has sent no whole event within this long. Default 5 s. */
  helloMs?: number;
  log?: Logger;
}

const ATTRIBUTION = { name: 'Hearth', url: 'https://github.com/hearth-home/hearth' };
const MAX_TEXT = 2000;
const MAX_KEY = 200;
const IDLE_MS = 5 * 60_000;
const STRANGER_IDLE_MS = 10_000;
const HELLO_MS = 5_000;

/** `::ffff:127.0.0.1` -> `127.0.0.1`. */
function plainAddress(address: string | undefined): string {
  const a = (address ?? '').toLowerCase();
  return a.startsWith('::ffff:') && a.includes('.') ? a.slice(7) : a;
}

/**
 * Refuse a satellite list start-up cannot make sense of (the schema checked
 * the shapes): names are unique, and at one address at most one satellite is
 * without a secret (a client's words cannot tell two of them apart).
 */
export function checkSatellites(satellites: WyomingSatellite[]): void {
  const seen = new Set<string>();
  const openAt = new Map<string, string>();
  satellites.forEach((s, i) => {
    if (seen.has(s.name.toLowerCase()))
      throw new ConfigError('config', `wyoming.satellites[${i}].name`, `${JSON.stringify(s.name)} is listed twice: each satellite needs a name of its own`);
    seen.add(s.name.toLowerCase());
    if (s.secret !== undefined) return;
    const address = plainAddress(s.address);
    const other = openAt.get(address);
    if (other !== undefined)
      throw new ConfigError(
        'config',
        `wyoming.satellites[${i}].secret`,
        `${JSON.stringify(s.name)} shares the address ${address} with ${JSON.stringify(other)} and neither has a secret: a client there cannot prove which it is. ` +
          'Give each satellite at a shared address but one a secret (the client sends context.satellite and context.satellite_secret), or list one satellite for the address',
      );
    openAt.set(address, s.name);
  });
}

/** Does a secret the client gave match the configured one (in constant time)? */
function secretMatches(configured: string, given: string): boolean {
  const a = createHash('sha256').update(configured, 'utf8').digest();
  const b = createHash('sha256').update(given, 'utf8').digest();
  return timingSafeEqual(a, b);
}

/** Text for a speaker: no markdown ticks. */
function speakable(text: string): string {
  return text.replace(/`/g, '').trim();
}

interface Connection {
  socket: Socket;
  address: string;
  /** From a satellite's address (else: a stranger, in the small pool). */
  known: boolean;
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
    const address = plainAddress(socket.remoteAddress);
    const known = this.satellitesAt(address).length > 0;
    // Satellites and strangers fill pools of their own: strangers never take a satellite's slot.
    const max = known ? (this.options.maxConnections ?? 64) : (this.options.maxStrangers ?? 4);
    let inPool = 0;
    for (const c of this.connections) if (c.known === known) inPool++;
    if (inPool >= max) {
      this.log.warn(
        { address, max, satellite: known },
        `Wyoming: too many connections from ${known ? "satellites' addresses" : 'addresses that are no satellite'}; this one is closed`,
      );
      socket.destroy();
      return;
    }
    socket.setNoDelay(true);
    // A connection that says nothing for this long gives its slot back.
    socket.setTimeout(known ? (this.options.idleMs ?? IDLE_MS) : (this.options.strangerIdleMs ?? STRANGER_IDLE_MS), () => {
      this.log.debug({ address }, 'Wyoming: idle connection closed');
      socket.destroy();
    });
    // A client opens a connection to say something: one that has said nothing within seconds is not one.
    let hello: NodeJS.Timeout | undefined = setTimeout(() => {
      this.log.debug({ address }, 'Wyoming: a connection sent no event; closed');
      socket.destroy();
    }, this.options.helloMs ?? HELLO_MS);
    hello.unref();
    const conn: Connection = { socket, address, known, queue: Promise.resolve(), closed: false };
    this.connections.add(conn);
    const reader = new FrameReader(this.options.limits ?? DEFAULT_FRAME_LIMITS);
    socket.on('data', (chunk: Buffer) => {
      if (conn.closed) return;
      let events: WyomingEvent[];
      try {
        events = reader.push(chunk);
        if (events.length && hello) {
          clearTimeout(hello);
          hello = undefined;
        }
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
      clearTimeout(hello);
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
    const version = hearthVersion();
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
          version,
          models: [{ name: 'hearth', attribution: ATTRIBUTION, installed: true, description, version, languages: ['en'] }],
          supports_handled_streaming: this.options.streaming ?? false,
          // Hearth runs the home's devices (under its policy): Home Assistant offers it as an agent that controls.
          supports_home_control: true,
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

  /**
   * The satellite a transcript speaks for: the one of its address that has no
   * secret, or the one whose secret the client gives (with its name). The
   * client's words alone never choose: a name without its secret is ignored.
   */
  private satelliteFor(conn: Connection, context: Record<string, unknown>): { satellite: WyomingSatellite } | { refused: string; why: string } {
    const here = this.satellitesAt(conn.address);
    if (!here.length) {
      this.log.warn({ address: conn.address }, 'Wyoming: a transcript from an address that is no configured satellite (wyoming.satellites); refused');
      return {
        refused: `This device is not one of Hearth's satellites, so I cannot act for it. Add its address ${conn.address} to wyoming.satellites.`,
        why: 'unknown satellite',
      };
    }
    const named = typeof context.satellite === 'string' ? context.satellite.slice(0, MAX_KEY).toLowerCase() : undefined;
    const secret = typeof context.satellite_secret === 'string' ? context.satellite_secret : undefined;
    if (secret !== undefined) {
      const claimed = here.find((s) => s.secret !== undefined && s.name.toLowerCase() === named);
      if (claimed?.secret !== undefined && secretMatches(claimed.secret, secret)) return { satellite: claimed };
      this.log.warn({ address: conn.address, satellite: named }, 'Wyoming: a transcript with a satellite secret that does not match; refused');
      return { refused: 'This satellite could not prove who it is, so I cannot act for it.', why: 'wrong satellite secret' };
    }
    const own = here.find((s) => s.secret === undefined);
    if (own) {
      if (named !== undefined && named !== own.name.toLowerCase())
        this.log.info(
          { address: conn.address, satellite: own.name, named },
          "Wyoming: a transcript names another satellite without its secret; it speaks as the address's own",
        );
      return { satellite: own };
    }
    this.log.warn({ address: conn.address, satellite: named }, 'Wyoming: a transcript from a shared address without a satellite secret; refused');
    return {
      refused:
        'The satellites at this address must say which they are with their secret (context.satellite and context.satellite_secret), so I cannot act for this one.',
      why: 'no satellite secret',
    };
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
    const who = this.satelliteFor(conn, context);
    if ('refused' in who) return notHandled(who.refused, who.why);
    const { satellite } = who;
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
    // Words are held until the turn acts (or ends): an answer the agent did not understand must go out as not-handled.
    let acting = false;
    let held = '';
    const chunk = (piece: string) => {
      if (!streamStarted) {
        streamStarted = true;
        this.send(conn, 'handled-start', answerContext ? { context: answerContext } : {});
      }
      this.send(conn, 'handled-chunk', { text: piece.replace(/`/g, '') });
    };
    try {
      const answer = await this.conversations.turn({
        principal,
        ...(conversationId ? { key: conversationId } : {}),
        text,
        signal: abort.signal,
        ...(streaming
          ? {
              onEvent: (e) => {
                if (acting || e.type !== 'tool_call_started') return;
                acting = true;
                if (held) chunk(held);
                held = '';
              },
              onText: (piece) => {
                if (timedOut || !piece) return;
                if (acting) chunk(piece);
                else held += piece;
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
        if (streamStarted) return this.stopStream(conn, ' Something went wrong.');
        return notHandled(`Sorry, I could not do that: ${why}`, `turn ${answer.result.stopReason}: ${why}`);
      }
      // Not understood (and nothing done): Home Assistant may ask another agent.
      if (!answer.understood && !answer.summary.toolCalls.length && !streamStarted)
        return notHandled(speakable(answer.text) || 'Sorry, I did not understand that.', 'not understood');
      this.log.info(
        { satellite: satellite.name, area: satellite.area, ms, calls: answer.summary.toolCalls.length, auditIds: answer.summary.auditIds },
        'Wyoming: handled',
      );
      if (streaming && (streamStarted || held)) {
        if (!streamStarted) this.send(conn, 'handled-start', answerContext ? { context: answerContext } : {});
        return this.stopStream(conn, streamStarted ? '' : held);
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
