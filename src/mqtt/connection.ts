// The bridge's one MQTT client. Two traps of MQTT.js defaults are closed here:
// Nagle's algorithm is turned off (it adds 40-90 ms to every round trip), and
// nothing is queued while the broker is away: a command asked during an
// outage fails at once and is never sent later.
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import mqtt, { type IClientOptions, type IClientPublishOptions, type ISubscriptionMap, type MqttClient } from 'mqtt';
import { redactUrl, type Logger } from '../log.js';
import { PerKeyThrottle } from '../util/per-key-throttle.js';
import { brokerNodes, connectTarget } from './broker-nodes.js';
import { dropPacketNumberCache } from './packet-numbers.js';
import { isPublishableTopic } from './topic.js';

// Before the first packet is written (which would fill the cache).
dropPacketNumberCache();

export type ConnectionState = 'connecting' | 'connected' | 'reconnecting' | 'closed';

export class MqttError extends Error {
  constructor(
    message: string,
    /** BROKER_DOWN, BAD_TOPIC, PUBLISH_FAILED, CLOSED */
    readonly code: string,
    /**
     * publish(): whether the message may have left. `no`: refused before it was handed to MQTT.js.
     * `unknown`: handed over while connected, and the connection closed before the broker's PUBACK:
     * the bytes may or may not have reached the broker (this wrapper drops the message rather than let
     * MQTT.js resend it on reconnect, so nothing leaves later).
     */
    readonly sent?: 'no' | 'unknown',
  ) {
    super(message);
    this.name = 'MqttError';
  }
}

export interface ConnectionOptions {
  /** One broker URL, or several nodes of one clustered broker, comma-separated (broker-nodes.ts). */
  url: string;
  username?: string;
  password?: string;
  clientId?: string;
  ca?: string;
  cert?: string;
  key?: string;
  rejectUnauthorized?: boolean;
  protocolVersion?: 3 | 4 | 5;
  keepalive?: number;
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
  /** Published retained on a clean disconnect is not possible; this is the last will. */
  will?: { topic: string; payload: string; retain: boolean; qos?: 0 | 1 };
  /** Create the client without connecting (listing tools needs no broker). */
  manualConnect?: boolean;
}

export interface PublishOptions {
  qos?: 0 | 1;
  retain?: boolean;
  /**
   * The message is worthless after this many seconds (a command: applied late, it is worse than never). MQTT 5:
   * the message expiry, so the broker drops it undelivered. MQTT 3.1.1 has no expiry, and a QoS 1 message can be
   * delivered long after (a broker's queue for a device's persistent session, NATS JetStream redelivering after
   * a node's death): such a message goes at QoS 0, which every broker delivers now or never.
   */
  expirySeconds?: number;
}

export interface MqttConnectionEvents {
  message: [topic: string, payload: Buffer, retained: boolean];
  state: [state: ConnectionState];
}

export class MqttConnection extends EventEmitter<MqttConnectionEvents> {
  readonly client: MqttClient;
  private readonly topics = new Set<string>();
  /** Of `topics`, those subscribed for what other clients publish there (subscribe's `othersOnly`). */
  private readonly othersOnly = new Set<string>();
  /** Topics whose SUBSCRIBE (true) or UNSUBSCRIBE (false) waits for a later turn (tellBroker), in the order asked. */
  private readonly waiting = new Map<string, boolean>();
  private waitingTurn?: NodeJS.Immediate;
  /** Topics subscribed whose SUBACK has not come back yet (sent, waiting for a later turn, or for the connection). */
  private readonly unacked = new Set<string>();
  /** Topics whose UNSUBSCRIBE the broker has not answered; those of them subscribed again meanwhile (sendUnsubscribe). */
  private readonly unsubscribing = new Set<string>();
  private readonly resubscribing = new Set<string>();
  /** Who waits for SUBACKs (whenSubscribed): each with the topics it waits for. */
  private readonly ackWaiters = new Set<{ topics: readonly string[]; done: () => void }>();
  private delay: number;
  private current: ConnectionState = 'connecting';
  private lastError = '';
  private readonly handlerErrors = new PerKeyThrottle();
  /** The MQTT version in use: 5 as configured, or 4 once a 3.1.1-only broker refused 5. */
  private protocol: 3 | 4 | 5;
  /** A CONNECT went out on the current socket and no CONNACK came back (yet). */
  private connectSent = false;
  /** MQTT 5 CONNECTs in a row the broker closed the socket on without answering. */
  private unansweredV5 = 0;
  private everConnected = false;
  /** Publishes handed to MQTT.js and not yet answered: each is ended with an error when the connection closes. */
  private readonly unwritten = new Set<() => void>();
  /**
   * When the connection last came back after it was lost, and on which node: on a cluster, a failover. A device
   * that has said nothing since may be stuck on a node that died (pipeline: "did not answer since ...").
   */
  lastReconnect?: { at: number; node?: string; moved: boolean };
  private lastNode?: string;

  constructor(
    readonly options: ConnectionOptions,
    private readonly log: Logger,
  ) {
    super();
    this.delay = options.reconnectMinMs ?? 500;
    this.protocol = options.protocolVersion ?? 4;
    const target = connectTarget(options.url);
    const clientOptions: IClientOptions = {
      username: options.username,
      password: options.password,
      clientId: options.clientId ?? `hearth-${process.pid}-${Math.random().toString(16).slice(2, 8)}`,
      protocolVersion: options.protocolVersion ?? 4,
      keepalive: options.keepalive ?? 30,
      reconnectPeriod: this.delay,
      connectTimeout: 10_000,
      clean: true,
      // We resubscribe ourselves so that the set of topics is always ours.
      resubscribe: false,
      queueQoSZero: false,
      // A refused CONNACK (bad password, broker not ready) is retried with backoff like any outage;
      // MQTT.js would otherwise stop for good while still looking like it reconnects.
      reconnectOnConnackError: true,
      rejectUnauthorized: options.rejectUnauthorized ?? true,
      ca: options.ca ? readFileSync(options.ca) : undefined,
      cert: options.cert ? readFileSync(options.cert) : undefined,
      key: options.key ? readFileSync(options.key) : undefined,
      will: options.will ? { ...options.will, qos: options.will.qos ?? 1 } : undefined,
      manualConnect: options.manualConnect ?? false,
      // Several nodes: each reconnect goes to the next one.
      servers: target.servers,
    };
    this.client = mqtt.connect(target.url, clientOptions);
    this.client.on('connect', (connack) => this.onConnect(connack.sessionPresent));
    this.client.on('close', () => this.onClose());
    this.client.on('error', (err) => {
      if (this.refusedVersion5(err)) return;
      if (err.message !== this.lastError) this.log.error({ err, url: redact(options.url) }, 'MQTT error');
      this.lastError = err.message;
    });
    this.client.on('message', (topic, payload, packet) => this.dispatch(topic, payload, packet.retain));
    this.client.on('packetsend', (packet) => {
      if (packet.cmd === 'connect') this.connectSent = true;
    });
    // Any CONNACK, even a refusal (a bad password), is an answer: only a close without one says "not 5".
    this.client.on('packetreceive', (packet) => {
      if (packet.cmd === 'connack') this.connectSent = false;
    });
  }

  /**
   * Hand one received message to every listener, each on its own: a listener
   * that throws is logged (once a minute per topic) and the next still runs,
   * so no payload can stop the bridge or starve another part of its messages.
   */
  private dispatch(topic: string, payload: Buffer, retained: boolean): void {
    for (const listener of this.rawListeners('message') as Array<(t: string, p: Buffer, r: boolean) => void>) {
      try {
        listener.call(this, topic, payload, retained);
      } catch (err) {
        const suppressed = this.handlerErrors.take(topic);
        if (suppressed === undefined) continue;
        this.log.error(
          { err, topic, bytes: payload.length, ...(suppressed ? { suppressed } : {}) },
          `skipped a message on ${topic.slice(0, 200)}: ${err instanceof RangeError ? 'it is nested too deeply' : 'its handler failed'}`,
        );
      }
    }
  }

  /**
   * A 3.1.1-only broker refuses an MQTT 5 CONNECT: NATS answers "unacceptable protocol version", RabbitMQ
   * 3.10 and aedes close the socket without a CONNACK. Either way go on with 3.1.1, whose only loss here is
   * the message expiry on commands (Hearth's own confirm timeout still bounds every call), and say so once.
   */
  private refusedVersion5(err: Error & { code?: number }): boolean {
    if (this.protocol !== 5) return false;
    // 1: "unacceptable protocol version" (3.1.1 CONNACK); 132 (0x84): "unsupported protocol version" (5).
    if (err.code !== 1 && err.code !== 132 && !/protocol version/i.test(err.message)) return false;
    this.fallBackTo311();
    return true;
  }

  private fallBackTo311(): void {
    this.protocol = 4;
    this.client.options.protocolVersion = 4;
    this.client.options.properties = undefined;
    this.log.warn(
      { url: redact(this.options.url) },
      'the broker speaks MQTT 3.1.1 only, not 5: using 3.1.1; commands carry no message expiry (the confirm timeout still bounds each call)',
    );
  }

  /** The MQTT version in use (5 falls back to 4 on a 3.1.1-only broker). */
  get protocolVersion(): 3 | 4 | 5 {
    return this.protocol;
  }

  /** The broker node this connection is on (host:port), when connected. */
  get node(): string | undefined {
    if (!this.client.connected) return undefined;
    return `${this.client.options.hostname ?? this.client.options.host}:${this.client.options.port}`;
  }

  get state(): ConnectionState {
    return this.current;
  }

  get connected(): boolean {
    return this.client.connected;
  }

  private setState(state: ConnectionState): void {
    if (state === this.current) return;
    this.current = state;
    this.emit('state', state);
  }

  private onConnect(sessionPresent: boolean): void {
    const socket = this.client.stream as Partial<Socket> | undefined;
    socket?.setNoDelay?.(true);
    this.delay = this.options.reconnectMinMs ?? 500;
    this.client.options.reconnectPeriod = this.delay;
    this.lastError = '';
    this.unansweredV5 = 0;
    const nodes = brokerNodes(this.options.url).length;
    this.log.info(
      { url: redact(this.options.url), ...(nodes > 1 ? { node: this.node } : {}), clientId: this.client.options.clientId, sessionPresent },
      'MQTT connected',
    );
    if (this.everConnected) this.lastReconnect = { at: Date.now(), node: this.node, moved: this.node !== this.lastNode };
    this.everConnected = true;
    this.lastNode = this.node;
    this.setState('connected');
    // Subscribing again replays retained messages, which rebuilds state after an outage. (A clean session: what
    // waited to be sent is in this, or was to be dropped.)
    this.waiting.clear();
    this.unsubscribing.clear();
    this.resubscribing.clear();
    for (const t of this.topics) this.unacked.add(t);
    if (this.topics.size) this.sendSubscribe([...this.topics]);
  }

  private onClose(): void {
    if (this.protocol === 5 && this.connectSent && this.current !== 'connected' && ++this.unansweredV5 >= 2) this.fallBackTo311();
    this.connectSent = false;
    // Drop every publish still waiting for its PUBACK: MQTT.js would resend it on reconnect.
    const outgoing = (this.client as unknown as { outgoing: Record<number, unknown> }).outgoing ?? {};
    for (const id of Object.keys(outgoing)) this.client.removeOutgoingMessage(Number(id));
    for (const end of [...this.unwritten]) end();
    if (this.current === 'closed') return;
    const wasConnected = this.current === 'connected';
    this.client.options.reconnectPeriod = this.delay;
    if (wasConnected) this.log.warn({ url: redact(this.options.url) }, 'MQTT connection lost; reconnecting');
    else this.log.debug({ inMs: this.delay }, 'MQTT reconnect scheduled');
    this.setState('reconnecting');
    this.delay = Math.min(this.delay * 2, this.options.reconnectMaxMs ?? 30_000);
  }

  /** Resolves once connected, or rejects after `timeoutMs`. */
  waitConnected(timeoutMs: number): Promise<void> {
    if (this.client.connected) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.off('state', onState);
        reject(
          new MqttError(`could not connect to ${redact(this.options.url)} within ${timeoutMs} ms${this.lastError ? `: ${this.lastError}` : ''}`, 'BROKER_DOWN'),
        );
      }, timeoutMs);
      const onState = (s: ConnectionState) => {
        if (s !== 'connected') return;
        clearTimeout(timer);
        this.off('state', onState);
        resolve();
      };
      this.on('state', onState);
    });
  }

  /**
   * `othersOnly`: only what other clients publish there is wanted, with its retain flag as published (a topic
   * Hearth itself publishes to, read for what others leave on it). On MQTT 5 the subscription says so (No Local,
   * Retain As Published): the broker sends none of Hearth's own messages back (a copy of every command, parsed
   * for nothing), and a message another client publishes retained arrives marked retained, at once rather than
   * at the next subscription. MQTT 3.1.1 has neither: such a topic is subscribed as any other.
   */
  subscribe(topics: Iterable<string>, options: { othersOnly?: boolean } = {}): void {
    const fresh = [...topics].filter((t) => !this.topics.has(t));
    for (const t of fresh) {
      this.topics.add(t);
      this.unacked.add(t);
      if (options.othersOnly) this.othersOnly.add(t);
    }
    this.tellBroker(fresh, true);
  }

  /**
   * SUBSCRIBE again to topics already subscribed (subscribe skips them): the broker replaces the subscription, with
   * no gap in what it delivers, and sends the topic's retained message again (MQTT 3.1.1 [MQTT-3.8.4-3]; MQTT 5 too,
   * the subscription asking for retained messages on every SUBSCRIBE: Retain Handling 0). For a source that changed
   * how a topic's payload is read (the state cache). Returns the topics a SUBSCRIBE of their own is sent for (now,
   * or in a later turn with a big change: tellBroker); not one that is not subscribed, nor one whose SUBSCRIBE has
   * not gone out yet (waiting for a later turn, for its UNSUBSCRIBE's answer, or for the connection: it brings the
   * retained message then, once).
   */
  resubscribe(topics: readonly string[]): string[] {
    if (!this.client.connected) return [];
    const again = topics.filter((t) => this.topics.has(t) && !this.waiting.has(t) && !this.unsubscribing.has(t));
    this.tellBroker(again, true);
    return again;
  }

  unsubscribe(topics: Iterable<string>): void {
    const gone = [...topics].filter((t) => this.topics.delete(t));
    for (const t of gone) this.othersOnly.delete(t);
    this.acked(gone);
    this.tellBroker(gone, false);
  }

  /**
   * Resolves once the broker has acknowledged the subscription of each of these topics (they are subscribed and a
   * message published from now on reaches Hearth), or after `timeoutMs`, or when `signal` aborts; resolves true
   * when acknowledged. Undefined when none waits for its SUBACK: nothing to wait for. A command to an entity
   * whose state topic was just subscribed (admitted a moment ago, its move just confirmed) waits for it, so the
   * device's answer is heard: a broker may handle a SUBSCRIBE and a later PUBLISH at once (aedes does for
   * packets read together), and a cluster sets a subscription up on every node.
   */
  whenSubscribed(topics: readonly string[], timeoutMs: number, signal?: AbortSignal): Promise<boolean> | undefined {
    const waiting = topics.filter((t) => this.unacked.has(t));
    if (!waiting.length) return undefined;
    return new Promise((resolve) => {
      const waiter = { topics: waiting, done: () => end(true) };
      const timer = setTimeout(() => end(false), timeoutMs);
      const onAbort = () => end(false);
      const end = (acked: boolean) => {
        if (!this.ackWaiters.delete(waiter)) return;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve(acked);
      };
      this.ackWaiters.add(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
      if (signal?.aborted) onAbort();
    });
  }

  /** These topics need no SUBACK any more (acknowledged, refused, or unsubscribed): their waiters go on. */
  private acked(topics: readonly string[]): void {
    if (!this.unacked.size) return;
    for (const t of topics) this.unacked.delete(t);
    for (const w of [...this.ackWaiters]) if (!w.topics.some((t) => this.unacked.has(t))) w.done();
  }

  /**
   * A few topics are (un)subscribed at once. A big change (a list of thousands of devices renamed: thousands of
   * topics each way) is sent in later turns of the event loop, SEND_PER_TURN topics a turn, so that the turn
   * that made the change is not also held by writing the packets; `subscriptions` says the new set at once, and
   * no message of a topic dropped is used meanwhile (its readers dropped it first). While some wait, everything
   * waits behind them, each topic's last wish kept.
   */
  private tellBroker(topics: string[], subscribe: boolean): void {
    if (!topics.length || !this.client.connected) return;
    if (!this.waiting.size && topics.length <= SEND_AT_ONCE) {
      if (subscribe) this.sendSubscribe(topics);
      else this.sendUnsubscribe(topics);
      return;
    }
    for (const t of topics) this.waiting.set(t, subscribe);
    this.waitingTurn ??= setImmediate(() => this.sendWaiting());
  }

  private sendWaiting(): void {
    this.waitingTurn = undefined;
    // Not connected: the next connection subscribes to every topic there is.
    if (!this.client.connected) return this.waiting.clear();
    const subscribe: string[] = [];
    const unsubscribe: string[] = [];
    for (const [topic, wish] of this.waiting) {
      this.waiting.delete(topic);
      (wish ? subscribe : unsubscribe).push(topic);
      if (subscribe.length + unsubscribe.length >= SEND_PER_TURN) break;
    }
    if (unsubscribe.length) this.sendUnsubscribe(unsubscribe);
    if (subscribe.length) this.sendSubscribe(subscribe);
    if (this.waiting.size) this.waitingTurn = setImmediate(() => this.sendWaiting());
  }

  get subscriptions(): ReadonlySet<string> {
    return this.topics;
  }

  /**
   * A topic dropped and subscribed again at once (a lock left out while its move waits, then confirmed) is
   * subscribed only once the broker has answered the UNSUBSCRIBE: a broker may handle two packets read together at
   * once (aedes does), and an UNSUBSCRIBE finishing after the SUBSCRIBE would leave Hearth deaf to the topic.
   */
  private sendUnsubscribe(topics: string[]): void {
    for (const t of topics) this.unsubscribing.add(t);
    this.client.unsubscribe(topics, () => {
      for (const t of topics) this.unsubscribing.delete(t);
      const again = topics.filter((t) => this.resubscribing.delete(t) && this.topics.has(t));
      if (again.length && this.client.connected) this.sendSubscribe(again);
    });
  }

  private sendSubscribe(all: string[]): void {
    const topics = this.unsubscribing.size ? all.filter((t) => !(this.unsubscribing.has(t) && this.resubscribing.add(t))) : all;
    // Brokers cap packet sizes; subscribe in batches.
    for (let i = 0; i < topics.length; i += 500) {
      const batch = topics.slice(i, i + 500);
      const map: ISubscriptionMap = {};
      for (const t of batch) map[t] = this.protocol === 5 && this.othersOnly.has(t) ? OTHERS_ONLY : PLAIN;
      this.client.subscribe(map, (err) => {
        if (err) this.log.error({ err }, 'MQTT subscribe failed');
        // Refused or acknowledged: nothing more to wait for. (A topic dropped and subscribed again before this
        // answer counts as acknowledged a packet early: the wait is a best effort, bounded either way.)
        this.acked(batch.filter((t) => this.topics.has(t)));
      });
    }
  }

  /**
   * Publish now or fail now. Resolves when the broker has the message
   * (PUBACK for QoS 1). Never queued for a later connection.
   */
  publish(topic: string, payload: string | Buffer, options: PublishOptions = {}): Promise<void> {
    if (!isPublishableTopic(topic)) {
      return Promise.reject(new MqttError(`refusing to publish to topic ${JSON.stringify(topic)}`, 'BAD_TOPIC', 'no'));
    }
    if (this.current === 'closed') return Promise.reject(new MqttError('MQTT connection is closed', 'CLOSED', 'no'));
    if (!this.client.connected) {
      return Promise.reject(new MqttError(`MQTT broker ${redact(this.options.url)} is not connected`, 'BROKER_DOWN', 'no'));
    }
    const expiring = options.expirySeconds !== undefined;
    const opts: IClientPublishOptions = { qos: expiring && this.protocol !== 5 ? 0 : (options.qos ?? 0), retain: options.retain ?? false };
    if (expiring && this.protocol === 5) {
      opts.properties = { messageExpiryInterval: Math.max(1, Math.floor(options.expirySeconds!)) };
    }
    return new Promise((resolve, reject) => {
      // A QoS 0 publish has no packet id, so dropping the outgoing store on close (onClose) does not end it: one
      // still being written when the connection drops would never be answered. The close ends it too.
      const settle = (err?: Error) => {
        if (!this.unwritten.delete(onClose)) return;
        if (err) reject(new MqttError(`publish to ${topic} failed: ${err.message}`, this.client.connected ? 'PUBLISH_FAILED' : 'BROKER_DOWN', 'unknown'));
        else resolve();
      };
      const onClose = () => settle(new Error('the connection closed while it was being sent'));
      this.unwritten.add(onClose);
      this.client.publish(topic, payload, opts, (err) => settle(err ?? undefined));
    });
  }

  async close(): Promise<void> {
    this.setState('closed');
    if (this.waitingTurn) clearImmediate(this.waitingTurn);
    this.waitingTurn = undefined;
    // A clean end waits for what is in flight; a broker that drops the connection meanwhile (RabbitMQ closes a
    // client whose subscribe its ACL refuses) must not hold a stop for ever: after a moment, end it by force.
    let timer: NodeJS.Timeout | undefined;
    const clean = this.client.endAsync(!this.client.connected).catch(() => undefined);
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), CLOSE_GRACE_MS);
    });
    if ((await Promise.race([clean, late])) === 'late') await this.client.endAsync(true).catch(() => undefined);
    clearTimeout(timer);
  }
}

/** A subscription's options (sendSubscribe): plain, or for what other clients publish (MQTT 5: subscribe's `othersOnly`). */
const PLAIN = { qos: 0 } as const;
const OTHERS_ONLY = { qos: 0, nl: true, rap: true } as const;

/** Most topics (un)subscribed in the turn that asks (one SUBSCRIBE packet's worth: see sendSubscribe). */
const SEND_AT_ONCE = 500;
/** Most topics a later turn sends when a big change waits (tellBroker). */
const SEND_PER_TURN = 1000;

/** How long a clean disconnect may take before it is forced. */
const CLOSE_GRACE_MS = 3000;

/** Credentials in a broker URL become `***` (for banners and messages; log lines are redacted by the logger too). */
export const redact = redactUrl;
