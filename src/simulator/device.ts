// One simulated device: its MQTT connection (with a last will on its
// availability topic), one document per state topic, and the behaviours of
// its entities. Commands are decoded with the bridge's own decodeCommand, so
// the simulator and the bridge can never disagree about the wire format.
import type { Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import mqtt, { type MqttClient } from 'mqtt';
import { ACTIONS_BY_KIND, CommandError, commandTopicsOf, decodeCommand, type Command } from '../devices/commands.js';
import { writeJsonPath } from '../devices/json-path.js';
import { isActuator, type Device, type Entity } from '../devices/model.js';
import type { Logger } from '../log.js';
import { connectTarget } from '../mqtt/broker-nodes.js';
import { createBehaviour, type Behaviour, type BehaviourHost } from './behaviours.js';
import type { OutageLog } from './outage.js';
import { errorOf } from '../util/error.js';

export interface DeviceLinkOptions {
  url: string;
  protocolVersion: 4 | 5;
  log: Logger;
  /** How long start() waits for the broker before giving up. */
  connectTimeoutMs: number;
  /** Shared by every device of a simulator: one log line per outage, not one per retry. */
  outage?: OutageLog;
  /**
   * The QoS of the device's command subscription: 1 (the default, as most firmware subscribes) or 0 (what keeps a
   * device reachable when its node of a clustered broker dies: docs/deployment.md).
   */
  commandQos?: 0 | 1;
  /** Told of every message the device receives on a command topic, as it arrives (a test records when). */
  onCommand?: (received: ReceivedCommand) => void;
}

/** A message a simulated device received on one of its command topics. */
export interface ReceivedCommand {
  device: string;
  topic: string;
  payload: string;
  /** When it arrived (epoch ms). */
  at: number;
}

/** One availability topic of the device, with the payloads that say online/offline on it. */
interface AvailabilityTopic {
  topic: string;
  online: string;
  offline: string;
}

/** An MQTT connection of the device. The first carries commands and state; one more per extra availability topic holds its will. */
interface Link {
  client: MqttClient;
  availability?: AvailabilityTopic;
  /** Settles once the first connect has published everything (or the link is given up). */
  ready: Promise<void>;
  abandon(reason: Error): void;
  /**
   * This connection has announced itself (online, state) since it last connected: the broker has taken its
   * subscription too (it handles a client's packets in order), so a command sent now reaches the device.
   */
  announced: boolean;
}

const CLOSE_WAIT_MS = 2000;

export class SimulatedDevice implements BehaviourHost {
  readonly id: string;
  readonly log: Logger;
  private readonly behaviours = new Map<string, Behaviour>();
  private readonly commandRoutes = new Map<string, Entity[]>();
  private readonly availability: AvailabilityTopic[];
  /** JSON state documents by topic, shared by the entities that report on the same topic. */
  private readonly docs = new Map<string, Record<string, unknown>>();
  /** Plain (non-JSON) state payloads by topic. */
  private readonly plain = new Map<string, string>();
  private links: Link[] = [];
  private running = false;
  private timersRunning = false;
  /** Bumped on every start/stop, so work from an older connection cannot start timers. */
  private epoch = 0;

  constructor(
    readonly device: Device,
    private readonly options: DeviceLinkOptions,
  ) {
    this.id = device.id;
    this.log = options.log.child({ device: device.id });
    this.availability = availabilityTopics(device);
    for (const entity of device.entities) {
      this.behaviours.set(entity.id, createBehaviour(entity, this));
      if (!isActuator(entity)) continue;
      for (const topic of commandTopicsOf(entity)) {
        const list = this.commandRoutes.get(topic);
        if (list) list.push(entity);
        else this.commandRoutes.set(topic, [entity]);
      }
    }
  }

  get isRunning(): boolean {
    return this.running;
  }

  entityIds(): string[] {
    return [...this.behaviours.keys()];
  }

  state(entityId: string): Record<string, unknown> {
    const b = this.behaviours.get(entityId);
    if (!b) throw new Error(`no simulated entity ${entityId}`);
    return b.snapshot();
  }

  /** Connect; resolves once online and the initial state are published. */
  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    const epoch = ++this.epoch;
    const [first, ...extra] = this.availability;
    this.links = [this.link(first, true, epoch), ...extra.map((a) => this.link(a, false, epoch))];
    try {
      await withTimeout(
        Promise.all(this.links.map((l) => l.ready)),
        this.options.connectTimeoutMs,
        `${this.id} could not connect to ${this.options.url} within ${this.options.connectTimeoutMs} ms`,
      );
    } catch (err) {
      if (this.epoch === epoch) await this.stop();
      throw err;
    }
  }

  /** Whether every link of the device is connected and has announced itself again (a test waits for it after an outage). */
  get connected(): boolean {
    return this.links.length > 0 && this.links.every((l) => l.client.connected && l.announced);
  }

  /** Stop behaving (timers, pending sends) and hand over the links to let go of. */
  private halt(how: 'stopped' | 'closed'): typeof this.links {
    this.running = false;
    this.epoch++;
    this.pauseBehaviours();
    const links = this.links;
    this.links = [];
    for (const l of links) l.abandon(new Error(`${this.id} was ${how}`));
    return links;
  }

  /** Lose power: timers stop and the sockets are destroyed without DISCONNECT, so the broker fires the last will. */
  async stop(): Promise<void> {
    if (!this.running) return;
    const links = this.halt('stopped');
    await Promise.all(
      links.map(
        (l) =>
          new Promise<void>((resolve) => {
            (l.client.stream as unknown as Socket | undefined)?.destroy();
            l.client.end(true, () => resolve());
          }),
      ),
    );
    this.log.info('device stopped (socket dropped)');
  }

  /** Clean shutdown: publish offline (retained), then disconnect. */
  async close(): Promise<void> {
    if (!this.running) return;
    const links = this.halt('closed');
    await Promise.all(
      links.map(async ({ client, availability }) => {
        if (client.connected && availability) {
          await withTimeout(client.publishAsync(availability.topic, availability.offline, { qos: 1, retain: true }), CLOSE_WAIT_MS, 'offline').catch(
            (err: unknown) => this.log.debug({ err: errorOf(err) }, 'could not publish offline'),
          );
        }
        await withTimeout(client.endAsync(!client.connected), CLOSE_WAIT_MS, 'disconnect').catch(
          () => new Promise<void>((resolve) => client.end(true, () => resolve())),
        );
      }),
    );
  }

  // --- BehaviourHost -------------------------------------------------------

  publishState(entity: Entity): void {
    for (const topic of this.render(entity)) void this.send(topic);
  }

  publishRaw(topic: string, payload: Buffer | string): Promise<void> {
    return this.sendPayload(topic, payload);
  }

  // --- connection ----------------------------------------------------------

  private link(availability: AvailabilityTopic | undefined, main: boolean, epoch: number): Link {
    const suffix = randomBytes(3).toString('hex');
    // A clustered broker's node list: a device, too, moves to a live node.
    const target = connectTarget(this.options.url);
    const client = mqtt.connect(target.url, {
      servers: target.servers,
      protocolVersion: this.options.protocolVersion,
      clientId: `hearth-sim-${this.id}${main ? '' : '-will'}-${suffix}`,
      clean: true,
      keepalive: 30,
      reconnectPeriod: 1000,
      connectTimeout: 5000,
      will: availability ? { topic: availability.topic, payload: Buffer.from(availability.offline), qos: 1, retain: true } : undefined,
    });
    let subscribed = false;
    let resolveReady!: () => void;
    let rejectReady!: (err: Error) => void;
    const ready = new Promise<void>((resolve, reject) => {
      resolveReady = resolve;
      rejectReady = reject;
    });
    ready.catch(() => undefined); // nobody may be waiting any more
    const link: Link = { client, availability, ready, abandon: rejectReady, announced: false };
    client.on('connect', () => {
      (client.stream as unknown as Socket).setNoDelay?.(true);
      this.log.debug({ main }, 'connected');
      link.announced = false;
      const work = async () => {
        if (main && !subscribed && this.commandRoutes.size) {
          await client.subscribeAsync([...this.commandRoutes.keys()], { qos: this.options.commandQos ?? 1 });
          subscribed = true;
        }
        if (availability) await client.publishAsync(availability.topic, availability.online, { qos: 1, retain: true });
        if (main) await this.publishEverything();
      };
      work().then(
        () => {
          if (client.connected) link.announced = true;
          if (epoch !== this.epoch) return;
          if (main && !this.timersRunning) {
            for (const b of this.behaviours.values()) b.start();
            this.timersRunning = true;
          }
          resolveReady();
        },
        (err: unknown) => this.log.warn({ err: errorOf(err) }, 'publishing the initial state failed'),
      );
    });
    client.on('message', (topic, payload) => {
      // Anyone may publish on a command topic: a command the simulator cannot follow is logged, never thrown.
      try {
        this.onCommand(topic, payload);
      } catch (err) {
        this.log.warn({ err, topic }, 'command ignored: it could not be applied');
      }
    });
    // mqtt.js resubscribes after a reconnect, and forgets a subscription the broker refuses (NATS can while
    // JetStream recovers from a node's death): the device stays connected but no command reaches it. Said once.
    client.on('packetreceive', (packet) => {
      if (packet.cmd === 'suback' && (packet.granted as Array<number | { qos: number }>).some((g) => (typeof g === 'number' ? g : g.qos) >= 0x80)) {
        this.log.warn({ granted: packet.granted }, 'the broker refused the command subscription: no command reaches this device');
      }
    });
    const linkName = `${this.id}${main ? '' : ':will'}`;
    const outage = this.options.outage;
    client.on('error', (err) => (outage ? outage.lost(linkName, err) : this.log.warn({ err }, 'mqtt error')));
    client.on('offline', () => outage?.lost(linkName));
    client.on('close', () => (link.announced = false));
    client.on('reconnect', () => outage?.retry());
    client.on('connect', () => outage?.back(linkName));
    return link;
  }

  /** Every entity's current state, each topic once; then what is not in documents (camera frames). */
  private async publishEverything(): Promise<void> {
    const topics = new Set<string>();
    for (const b of this.behaviours.values()) for (const t of this.render(b.entity)) topics.add(t);
    await Promise.all([...topics].map((t) => this.send(t)));
    await Promise.all([...this.behaviours.values()].map((b) => b.announce()));
  }

  private pauseBehaviours(): void {
    for (const b of this.behaviours.values()) b.pause();
    this.timersRunning = false;
  }

  // --- state documents -----------------------------------------------------

  /** Write an entity's wire state into its topics' documents; returns the topics touched. */
  private render(entity: Entity): Set<string> {
    const touched = new Set<string>();
    const wire = this.behaviours.get(entity.id)?.wire();
    if (!wire) return touched;
    const put = (topic: string, path: string | undefined, value: unknown) => {
      if (value === undefined) return;
      if (path) {
        let doc = this.docs.get(topic);
        if (!doc) this.docs.set(topic, (doc = {}));
        writeJsonPath(doc, path, value);
      } else {
        this.plain.set(topic, typeof value === 'string' ? value : value !== null && typeof value === 'object' ? JSON.stringify(value) : String(value));
      }
      touched.add(topic);
    };
    if (entity.stateTopic) put(entity.stateTopic, entity.valuePath, wire.value);
    for (const [name, source] of Object.entries(entity.attributes)) {
      if (!(name in wire.attributes)) continue;
      // An attribute with neither a topic nor a path would be the whole main payload: nothing sensible to write.
      if (!source.topic && !source.path) continue;
      const topic = source.topic ?? entity.stateTopic;
      if (topic) put(topic, source.path, wire.attributes[name]);
    }
    return touched;
  }

  private send(topic: string): Promise<void> {
    const doc = this.docs.get(topic);
    const payload = doc ? JSON.stringify(doc) : this.plain.get(topic);
    return payload === undefined ? Promise.resolve() : this.sendPayload(topic, payload);
  }

  private sendPayload(topic: string, payload: Buffer | string): Promise<void> {
    const client = this.links[0]?.client;
    // While away, state is only kept: every (re)connect publishes it all again.
    if (!client?.connected) return Promise.resolve();
    return client.publishAsync(topic, payload, { qos: 1, retain: true }).then(
      () => undefined,
      (err: unknown) => this.log.debug({ topic, err: errorOf(err) }, 'publish failed'),
    );
  }

  // --- commands ------------------------------------------------------------

  private onCommand(topic: string, payload: Buffer): void {
    if (!this.running) return;
    const text = payload.toString('utf8');
    this.options.onCommand?.({ device: this.id, topic, payload: text, at: Date.now() });
    for (const entity of this.commandRoutes.get(topic) ?? []) {
      const behaviour = this.behaviours.get(entity.id)!;
      let cmd: Command;
      try {
        cmd = decodeCommand(entity, topic, text);
      } catch (err) {
        const reason = err instanceof CommandError ? err.message : `could not decode: ${String(err)}`;
        this.log.warn({ entity: entity.id, topic, payload: text.slice(0, 200), reason }, 'command ignored');
        continue;
      }
      const problem = ACTIONS_BY_KIND[entity.kind]?.includes(cmd.action) ? behaviour.reject(cmd) : `${entity.kind} cannot ${cmd.action}`;
      if (problem) {
        this.log.warn({ entity: entity.id, topic, command: cmd, reason: problem }, 'command ignored');
        continue;
      }
      this.log.info({ entity: entity.id, command: cmd }, 'command accepted');
      behaviour.apply(cmd);
    }
  }
}

/** The distinct availability topics of a device and its entities, with the payloads for each. */
function availabilityTopics(device: Device): AvailabilityTopic[] {
  const sources = [device.availability, ...device.entities.map((e) => e.availability)].flatMap((a) => a?.sources ?? []);
  const byTopic = new Map<string, typeof sources>();
  for (const s of sources) {
    const list = byTopic.get(s.topic);
    if (!list) byTopic.set(s.topic, [s]);
    else if (!list.some((o) => o.path === s.path)) list.push(s);
  }
  return [...byTopic].map(([topic, list]) => {
    const whole = list.find((s) => !s.path);
    if (whole) return { topic, online: whole.payloadAvailable, offline: whole.payloadNotAvailable };
    const online: Record<string, unknown> = {};
    const offline: Record<string, unknown> = {};
    for (const s of list) {
      writeJsonPath(online, s.path!, s.payloadAvailable);
      writeJsonPath(offline, s.path!, s.payloadNotAvailable);
    }
    return { topic, online: JSON.stringify(online), offline: JSON.stringify(offline) };
  });
}

/** Race a promise against a timer that never outlives the race. */
export async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
