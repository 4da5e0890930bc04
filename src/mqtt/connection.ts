// The bridge's one MQTT client. Two traps of MQTT.js defaults are closed here:
// Nagle's algorithm is turned off (it adds 40-90 ms to every round trip), and
// nothing is queued while the broker is away: a command asked during an
// outage fails at once and is never sent later.
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import mqtt, { type IClientOptions, type IClientPublishOptions, type MqttClient } from 'mqtt';
import { redactUrl, type Logger } from '../log.js';
import { PerKeyThrottle } from '../util/per-key-throttle.js';
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
  /** MQTT 5 message expiry: a broker drops the command if it cannot deliver it in time. */
  expirySeconds?: number;
}

export interface MqttConnectionEvents {
  message: [topic: string, payload: Buffer, retained: boolean];
  state: [state: ConnectionState];
}

export class MqttConnection extends EventEmitter<MqttConnectionEvents> {
  readonly client: MqttClient;
  private readonly topics = new Set<string>();
  private delay: number;
  private current: ConnectionState = 'connecting';
  private lastError = '';
  private readonly handlerErrors = new PerKeyThrottle();

  constructor(
    readonly options: ConnectionOptions,
    private readonly log: Logger,
  ) {
    super();
    this.delay = options.reconnectMinMs ?? 500;
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
    };
    this.client = mqtt.connect(options.url, clientOptions);
    this.client.on('connect', (connack) => this.onConnect(connack.sessionPresent));
    this.client.on('close', () => this.onClose());
    this.client.on('error', (err) => {
      if (err.message !== this.lastError) this.log.error({ err, url: redact(options.url) }, 'MQTT error');
      this.lastError = err.message;
    });
    this.client.on('message', (topic, payload, packet) => this.dispatch(topic, payload, packet.retain));
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
    this.log.info({ url: redact(this.options.url), sessionPresent }, 'MQTT connected');
    this.setState('connected');
    // Subscribing again replays retained messages, which rebuilds state after an outage.
    if (this.topics.size) this.sendSubscribe([...this.topics]);
  }

  private onClose(): void {
    // Drop every publish still waiting for its PUBACK: MQTT.js would resend it on reconnect.
    const outgoing = (this.client as unknown as { outgoing: Record<number, unknown> }).outgoing ?? {};
    for (const id of Object.keys(outgoing)) this.client.removeOutgoingMessage(Number(id));
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

  subscribe(topics: Iterable<string>): void {
    const fresh = [...topics].filter((t) => !this.topics.has(t));
    for (const t of fresh) this.topics.add(t);
    if (fresh.length && this.client.connected) this.sendSubscribe(fresh);
  }

  unsubscribe(topics: Iterable<string>): void {
    const gone = [...topics].filter((t) => this.topics.delete(t));
    if (gone.length && this.client.connected) this.client.unsubscribe(gone);
  }

  get subscriptions(): ReadonlySet<string> {
    return this.topics;
  }

  private sendSubscribe(topics: string[]): void {
    // Brokers cap packet sizes; subscribe in batches.
    for (let i = 0; i < topics.length; i += 500) {
      this.client.subscribe(topics.slice(i, i + 500), { qos: 0 }, (err) => {
        if (err) this.log.error({ err }, 'MQTT subscribe failed');
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
    const opts: IClientPublishOptions = { qos: options.qos ?? 0, retain: options.retain ?? false };
    if (options.expirySeconds && this.options.protocolVersion === 5) {
      opts.properties = { messageExpiryInterval: options.expirySeconds };
    }
    return new Promise((resolve, reject) => {
      this.client.publish(topic, payload, opts, (err) => {
        if (err) reject(new MqttError(`publish to ${topic} failed: ${err.message}`, this.client.connected ? 'PUBLISH_FAILED' : 'BROKER_DOWN', 'unknown'));
        else resolve();
      });
    });
  }

  async close(): Promise<void> {
    this.setState('closed');
    await this.client.endAsync(!this.client.connected).catch(() => undefined);
  }
}

/** Credentials in a broker URL become `***` (for banners and messages; log lines are redacted by the logger too). */
export const redact = redactUrl;
