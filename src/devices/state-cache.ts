// The latest state of every entity, mirrored from MQTT. Subscribing replays
// retained messages, so a restart or a reconnect rebuilds the picture. A
// payload that does not fit is logged (once a minute per topic) and skipped.
import { EventEmitter } from 'node:events';
import type { Logger } from '../log.js';
import { applyTransform, decodeFrame, Message, normalizeAttribute, normalizeValue, PayloadError, type Frame, type StateValue } from './decode.js';
import { readJsonPath } from './json-path.js';
import { type AvailabilitySource, type Device, type Entity, FRAME_KINDS } from './model.js';
import { type ComparisonMemo, newReadings, type ReadingChanges, readingChanges } from './reading.js';
import { PerKeyThrottle } from '../util/per-key-throttle.js';
import { TokenBucket } from '../util/token-bucket.js';

export interface EntityState {
  entityId: string;
  /** The main value in the entity's logical vocabulary (`on`, `locked`, 21.5, ...); undefined until heard. */
  value?: StateValue;
  /** Further attributes (brightness, position, target temperature, ...). */
  attributes: Record<string, StateValue>;
  /** When the value or an attribute last arrived (epoch ms). */
  updatedAt?: number;
  /**
   * The newest value, attribute or frame was a retained message: the broker's
   * copy from before Hearth subscribed. updatedAt is then when Hearth heard it,
   * not when the device reported it: its age is unknown.
   */
  retained?: boolean;
  /** true/false from the availability topics; null when they have not spoken yet; true when there are none. */
  available: boolean | null;
  availabilityAt?: number;
  /** Camera: the latest frame. */
  frame?: Frame & { at: number };
  /** Its device stopped answering commands (markSilent), until it answers one (or, silent since the command, reports state). */
  silent?: Silence;
}

/** A device that stopped answering commands. */
export interface Silence {
  /** Since when: the failover, the device's reconnect, or the command it left unanswered (epoch ms). */
  since: number;
  /**
   * Why it is thought silent: `failover`: it has answered no command since the broker connection failed over (or
   * came back), whatever else it sent (a device whose subscription was lost with a node still publishes its
   * state); `reconnected`: nor since it reconnected itself, after such a failover; `nothing`: no state report came
   * from it since the command.
   */
  cause: 'failover' | 'reconnected' | 'nothing';
  /** A broker failover happened before the command: the likely reason (the text says so). */
  afterFailover: boolean;
}

/** The attributes of a state that has none yet: one shared, frozen object (10,000 sensors need no empty object each). */
const NO_ATTRIBUTES: Record<string, StateValue> = Object.freeze({});

/**
 * What a topic feeds. Most routes are an entity's main value (a camera's: its frame): the entity itself, with no
 * object of its own. An attribute says which and where; availability is one route for all the entities that share
 * the source (a device's entities share its availability), not one per entity (issue 45: ~0.9 MiB of 10,000).
 */
type Route = Entity | AttributeRoute | AvailabilityRoute;
interface AttributeRoute {
  role: 'attribute';
  entity: Entity;
  name: string;
  path?: string;
}
interface AvailabilityRoute {
  role: 'availability';
  source: AvailabilitySource;
  entities: Entity[];
}

const isRole = (route: Route): route is AttributeRoute | AvailabilityRoute => 'role' in route;

/**
 * One entity's state as the cache keeps it: every field there from the start, so that V8 lays all of them out in
 * the object itself (a state that gained its value and times later needed a second block of 64 bytes for them, per
 * entity), and the entity it belongs to beside it, private (not part of what a door shows), so that the cache needs
 * no map of entities of its own.
 */
class CachedState implements EntityState {
  value: StateValue | undefined = undefined;
  updatedAt: number | undefined = undefined;
  retained: boolean | undefined = undefined;
  availabilityAt: number | undefined = undefined;
  // A camera's frames and a silence are rare: added when they come.
  declare frame?: Frame & { at: number };
  declare silent?: Silence;
  attributes: Record<string, StateValue> = NO_ATTRIBUTES;
  readonly entityId: string;
  available: boolean | null;
  #entity: Entity;

  constructor(entity: Entity) {
    this.entityId = entity.id;
    this.available = entity.availability ? null : true;
    this.#entity = entity;
  }

  get entity(): Entity {
    return this.#entity;
  }

  set entity(entity: Entity) {
    this.#entity = entity;
  }
}

export interface MessageSource {
  subscribe(topics: Iterable<string>): void;
  unsubscribe(topics: Iterable<string>): void;
  /**
   * SUBSCRIBE again to topics already subscribed, so that the broker sends their retained messages again (MQTT
   * does on every SUBSCRIBE). Returns those it sends a SUBSCRIBE of their own for: a topic whose SUBSCRIBE has not
   * gone out yet (or will go out at the next connection) gets its retained message then, for every reader.
   */
  resubscribe(topics: readonly string[]): readonly string[];
  on(event: 'message', fn: (topic: string, payload: Buffer, retained: boolean) => void): unknown;
  /** `connected`: a new session, every topic subscribed again, so every retained message comes again. */
  on(event: 'state', fn: (state: string) => void): unknown;
  off(event: 'message', fn: (topic: string, payload: Buffer, retained: boolean) => void): unknown;
  off(event: 'state', fn: (state: string) => void): unknown;
}

export interface StateCacheEvents {
  /** An entity's state changed (value, attribute, availability or frame). */
  change: [state: EntityState, entity: Entity];
  /** A payload was skipped. */
  malformed: [topic: string, entityId: string, error: PayloadError];
}

const LOG_EVERY_MS = 60_000;

/**
 * A topic is read again (subscribed again, for the broker to send its retained message again) at most once in this
 * long: a source that flips how a reading is read at every flush (a discovery config re-published with one template,
 * then another) would otherwise have the broker replay the topic's whole retained message to Hearth each time.
 */
export const REREAD_TOPIC_MIN_MS = 10_000;
/** Topics read again a second on average, over every topic (a token bucket)... */
export const REREAD_TOPICS_PER_SECOND = 50;
/**
 * ...and at once. Over either bound, a topic waits its turn (StateCache.deferred): read again when its interval is
 * over and the bucket has a token, a topic of each device in turn.
 */
export const REREAD_TOPICS_BURST = 200;
/** The bounds on reading topics again (REREAD_*), which a test may make small. */
export interface RereadLimits {
  topicMinMs: number;
  perSecond: number;
  burst: number;
}
/** The shortest wait between two turns of the deferred topics: each turn takes what the bucket gave meanwhile. */
const DRAIN_MIN_MS = 100;

/** A topic subscribed again (setDevices), until its retained copies have come (StateCache.rereading). */
interface Rereading {
  /** The readings its retained copy is for (readKey): those read differently now. Cleared by a live message. */
  keys: Set<string>;
  /**
   * SUBSCRIBEs sent whose retained copy has not come yet: each retained message on the topic takes one. A topic
   * with no retained message gets none: the entry is over REREAD_TOPIC_MIN_MS after the last (handle).
   */
  pending: number;
  /** When the last of them was sent. */
  at: number;
}

/** A topic waiting its turn to be read again (StateCache.deferred). */
interface Deferred {
  /** The readings it is read again for (readKey). */
  keys: Set<string>;
  /** The device whose turn it takes (that of the first reading it was deferred for). */
  device: string;
}

export class StateCache extends EventEmitter<StateCacheEvents> {
  private routes = new Map<string, Route[]>();
  private states = new Map<string, CachedState>();
  /**
   * Per entity with several availability sources, what each source topic last said: `[topic, online, topic,
   * online...]`, an array at its size (a Map each was ~220 bytes: a Zigbee2MQTT home's entities all have two, the
   * device's and the bridge's; issue 45).
   */
  private availabilityBySource = new Map<string, Array<string | boolean>>();
  private lastLogged = new Map<string, number>();
  /** Per device: when it last sent anything live (a retained copy the broker replays says nothing of now). */
  private heard = new Map<string, number>();
  /** Per device: when it last said it is online, live. */
  private announced = new Map<string, number>();
  /** Devices with a silence mark (markSilent), so a message of any other costs nothing. */
  private silentDevices = new Set<string>();
  private suppressed = new Map<string, number>();
  private readonly listenerErrors = new PerKeyThrottle(LOG_EVERY_MS);
  /**
   * Per topic subscribed again (setDevices), the readings its retained messages are for, and how many are still to
   * come. The broker sends such a message to Hearth, not to a reader: it is the device's last retained report,
   * maybe older than what a live message told the other readers since, so it is theirs to skip. A live message
   * goes to every reader, so after it no retained copy still to come is anyone's (keys cleared, pending kept). Gone
   * when every copy has come, with the topic, and with a new session (every reader gets every retained message).
   */
  private rereading = new Map<string, Rereading>();
  /** When each topic was last subscribed again (REREAD_TOPIC_MIN_MS); gone with the topic. */
  private rereadAt = new Map<string, number>();
  private readonly rereadBucket: TokenBucket;
  private readonly limits: RereadLimits;
  /**
   * Topics to read again past the bounds (REREAD_*), waiting their turn, by topic: never dropped (a sleepy sensor
   * reports live once in hours). A timer reads them again as their intervals end and the bucket fills (drain), a
   * topic of each device in turn, so that a device changing how hundreds of readings are read (anyone may publish
   * discovery configs) keeps no other device's waiting. Pruned with the routes, as `rereading` is (no more topics
   * than the cache reads, no more keys than their readings); gone with a new session (every retained message comes
   * again) and with any message on the topic read by every reader.
   */
  private deferred = new Map<string, Deferred>();
  /** The devices with topics in `deferred`, with those topics, the device served longest ago first. */
  private deferredByDevice = new Map<string, Set<string>>();
  private drainTimer?: NodeJS.Timeout;
  /** Readings deferred since the last line that said so, and on how many topics; when that line was; the next one's timer. */
  private deferredSince = { readings: 0, topics: 0 };
  private deferredLineAt?: number;
  private deferredLineTimer?: NodeJS.Timeout;
  private readonly onMessage = (topic: string, payload: Buffer, retained: boolean) => this.handle(topic, payload, retained);
  private readonly onState = (state: string) => {
    if (state !== 'connected') return;
    this.rereading.clear();
    this.deferred.clear();
    this.deferredByDevice.clear();
    clearTimeout(this.drainTimer);
    this.drainTimer = undefined;
  };

  constructor(
    private readonly source: MessageSource,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
    limits: Partial<RereadLimits> = {},
  ) {
    super();
    this.limits = { topicMinMs: REREAD_TOPIC_MIN_MS, perSecond: REREAD_TOPICS_PER_SECOND, burst: REREAD_TOPICS_BURST, ...limits };
    this.rereadBucket = new TokenBucket(this.limits.perSecond, this.limits.burst, now);
    source.on('message', this.onMessage);
    source.on('state', this.onState);
  }

  /**
   * Build the routes of a set of devices about to come (the registry's `preparing`), so that setDevices with the
   * same array only swaps them in: for 10,000 entities the routes are ~30,000 objects, built in a turn of their
   * own rather than the turn of the swap. Nothing is routed by them before setDevices. So are the kept entities
   * compared with what the cache has (readingChanges: ~10 ms for 10,000 when nothing is hot yet), unless another
   * set is swapped in meanwhile.
   */
  prepare(devices: Device[]): void {
    const { routes, entities } = routesOf(devices);
    const changes = new Map<string, ReadingChanges>();
    const memo: ComparisonMemo = {};
    // The first set: nothing to compare with.
    if (this.states.size)
      for (const entity of entities) {
        const was = this.states.get(entity.id)?.entity;
        const c = was && was !== entity ? readingChanges(was, entity, memo) : undefined;
        if (c) changes.set(entity.id, c);
      }
    this.prepared = { devices, routes, entities, swaps: this.swaps, changes };
  }

  private prepared?: {
    devices: Device[];
    routes: Map<string, Route[]>;
    entities: Entity[];
    /** The set swapped in when it was prepared (setDevices counts): its entities the ones compared. */
    swaps: number;
    /** The kept entities read otherwise, by id. */
    changes: Map<string, ReadingChanges>;
  };
  /** Sets swapped in (setDevices). */
  private swaps = 0;

  /**
   * Replace the set of devices: subscribe what is new, drop what is gone, keep the rest's state. A kept entity that
   * its source now reads another way (readingChanges: another template, path, vocabulary...) loses what was read the
   * old way, and is read again from the broker's retained copy: its topics subscribed again, the rest of their
   * readers left as they are. So is a reading new on a topic already subscribed (a new entity, an attribute, or a
   * reading moved there), without losing anything. One read the same way (a source re-publishing what it had)
   * costs nothing. A topic is subscribed again within bounds (REREAD_*): past them, it waits its turn (deferred),
   * unless the device's next live report reads it first.
   */
  setDevices(devices: Device[]): void {
    const prepared = this.prepared?.devices === devices ? this.prepared : undefined;
    const { routes, entities } = prepared ?? routesOf(devices);
    const compared = prepared?.swaps === this.swaps ? prepared.changes : undefined;
    this.prepared = undefined;
    this.swaps++;
    const before = new Set(this.routes.keys());
    const after = new Set(routes.keys());
    this.routes = routes;
    // A state stays while its entity does (with the entity's new object); it goes with the entity.
    const kept = new Set<string>();
    const again = new Map<string, Set<string>>();
    const memo: ComparisonMemo = {};
    let cleared: Entity[] | undefined;
    for (const entity of entities) {
      kept.add(entity.id);
      const prev = this.states.get(entity.id);
      let changes: ReadingChanges | undefined;
      let was: Entity | undefined;
      if (!prev) {
        this.states.set(entity.id, new CachedState(entity));
        // Nothing held before (the first set of devices): every topic is new, and read for every reader.
        if (before.size) changes = newReadings(entity);
      } else {
        was = prev.entity;
        prev.entity = entity;
        if (!entity.availability) prev.available = true;
        if (was !== entity) changes = compared ? compared.get(entity.id) : readingChanges(was, entity, memo);
        if (changes && this.forget(prev, entity, changes)) (cleared ??= []).push(entity);
      }
      if (changes) readAgainOf(entity, changes, was, before, again);
    }
    for (const id of [...this.states.keys()]) {
      if (!kept.has(id)) {
        this.states.delete(id);
        this.availabilityBySource.delete(id);
      }
    }
    this.pruneRereading(kept);
    for (const topic of this.rereadAt.keys()) if (!after.has(topic)) this.rereadAt.delete(topic);
    this.source.unsubscribe([...before].filter((t) => !after.has(t)));
    this.source.subscribe([...after].filter((t) => !before.has(t)));
    if (again.size) this.readAgainFromBroker(again);
    for (const entity of cleared ?? []) this.changed(entity.stateTopic ?? entity.id, entity);
  }

  /**
   * Have the broker send the retained message of each topic of `again` once more, for the readings named, within the
   * bounds (REREAD_*): at once, or in its turn (drain). A topic whose copy is still to come, asked for lately, reads
   * that copy for them too.
   */
  private readAgainFromBroker(again: Map<string, Set<string>>): void {
    const now = this.now();
    for (const [topic, keys] of again) {
      const waiting = this.rereading.get(topic);
      if (waiting && waiting.pending > 0 && now - waiting.at < this.limits.topicMinMs) {
        for (const k of keys) waiting.keys.add(k);
        continue;
      }
      this.defer(topic, keys);
    }
    this.drain();
    // What of this change waits its turn: said (a line a minute at most).
    let readings = 0;
    let topics = 0;
    for (const [topic, keys] of again) {
      const deferred = this.deferred.get(topic);
      if (!deferred) continue;
      topics++;
      for (const k of keys) if (deferred.keys.has(k)) readings++;
    }
    if (!topics) return;
    this.deferredSince.readings += readings;
    this.deferredSince.topics += topics;
    this.sayDeferred(false);
  }

  /** Put a topic in line to be read again for these readings (with those it waits for already). */
  private defer(topic: string, keys: Set<string>): void {
    const deferred = this.deferred.get(topic);
    if (deferred) {
      for (const k of keys) deferred.keys.add(k);
      return;
    }
    const first = keys.values().next().value;
    const device = (first !== undefined ? this.states.get(entityOfKey(first))?.entity.deviceId : undefined) ?? '';
    this.deferred.set(topic, { keys, device });
    const topics = this.deferredByDevice.get(device);
    if (topics) topics.add(topic);
    else this.deferredByDevice.set(device, new Set([topic]));
  }

  /** The topic out of line: read again now, read by a message for everyone, or gone. Its readings, if it was in line. */
  private undefer(topic: string): Set<string> | undefined {
    const deferred = this.deferred.get(topic);
    if (!deferred) return undefined;
    this.deferred.delete(topic);
    const topics = this.deferredByDevice.get(deferred.device);
    topics?.delete(topic);
    if (topics && !topics.size) this.deferredByDevice.delete(deferred.device);
    return deferred.keys;
  }

  /**
   * Read again the deferred topics whose turn it is: as many as the bucket has tokens for, each once its interval
   * since it was last read again is over, a topic of each device in turn (the device served longest ago first).
   * A token is taken for each topic the connection sends a SUBSCRIBE for: one it does not (the connection down, the
   * topic's own SUBSCRIBE still to go out) gets its retained message for every reader anyway. A timer comes back for
   * the rest.
   */
  private drain(): void {
    clearTimeout(this.drainTimer);
    this.drainTimer = undefined;
    if (!this.deferred.size) return;
    const now = this.now();
    const min = this.limits.topicMinMs;
    const open = (topic: string) => {
      const last = this.rereadAt.get(topic);
      return last === undefined || now - last >= min;
    };
    const tokens = this.rereadBucket.available();
    const ask = new Map<string, Set<string>>();
    // A device served goes to the back of the map, and this loop reaches it again after the others: round robin.
    for (const [device, topics] of this.deferredByDevice) {
      if (ask.size >= tokens) break;
      let topic: string | undefined;
      for (const t of topics) {
        if (!open(t)) continue;
        topic = t;
        break;
      }
      if (topic === undefined) continue;
      ask.set(topic, this.undefer(topic)!);
      if (this.deferredByDevice.has(device)) {
        this.deferredByDevice.delete(device);
        this.deferredByDevice.set(device, topics);
      }
    }
    if (ask.size) {
      for (const topic of this.source.resubscribe([...ask.keys()])) {
        this.rereadBucket.take();
        this.rereadAt.set(topic, now);
        const keys = ask.get(topic)!;
        const waiting = this.rereading.get(topic);
        if (waiting && now - waiting.at < min) {
          for (const k of keys) waiting.keys.add(k);
          waiting.pending++;
          waiting.at = now;
        } else this.rereading.set(topic, { keys, pending: 1, at: now });
      }
    }
    if (!this.deferred.size) return;
    let soonest = Number.POSITIVE_INFINITY;
    for (const topic of this.deferred.keys()) {
      const last = this.rereadAt.get(topic);
      soonest = Math.min(soonest, last === undefined ? now : last + min);
      if (soonest <= now) break;
    }
    const delay = Math.max(soonest - now, this.rereadBucket.msUntilToken(), DRAIN_MIN_MS);
    this.drainTimer = setTimeout(() => {
      // From a timer: nothing may escape it.
      try {
        this.drain();
      } catch (err) {
        this.log.error({ err }, 'could not read topics again from the broker');
      }
    }, delay);
    this.drainTimer.unref?.();
  }

  /**
   * A line for the readings deferred since the last one: at once when none was said in the last minute, else when
   * that minute ends (`ending`), with what added up meanwhile.
   */
  private sayDeferred(ending: boolean): void {
    if (!this.deferredSince.readings && !this.deferredSince.topics) return;
    const now = this.now();
    if (!ending && this.deferredLineAt !== undefined && now - this.deferredLineAt < LOG_EVERY_MS) {
      if (!this.deferredLineTimer) {
        this.deferredLineTimer = setTimeout(
          () => {
            this.deferredLineTimer = undefined;
            this.sayDeferred(true);
          },
          this.deferredLineAt + LOG_EVERY_MS - now,
        );
        this.deferredLineTimer.unref?.();
      }
      return;
    }
    clearTimeout(this.deferredLineTimer);
    this.deferredLineTimer = undefined;
    const { readings, topics } = this.deferredSince;
    this.deferredSince = { readings: 0, topics: 0 };
    this.deferredLineAt = now;
    const { topicMinMs, perSecond } = this.limits;
    this.log.warn(
      { readings, topics, waitingTopics: this.deferred.size, perTopicMs: topicMinMs, perSecond },
      `${readings} readings on ${topics} topics, read another way or new on a topic Hearth reads already, wait their turn to be read again from the broker's retained copy (a topic is read again at most once in ${topicMinMs / 1000} s, ${perSecond} topics a second, a topic of each device in turn): until then, or their devices' next live report, they are unknown`,
    );
  }

  /**
   * The readings a retained copy still to come (or a topic in line) is for: only those of entities kept, and only
   * readings the topic has now (no more keys than it has readers); a topic gone goes, and so does a copy asked for
   * longer than REREAD_TOPIC_MIN_MS ago (it never came: the topic holds no retained message).
   */
  private pruneRereading(kept: ReadonlySet<string>): void {
    const now = this.now();
    for (const [topic, waiting] of this.rereading) {
      const routes = this.routes.get(topic);
      if (!routes || now - waiting.at >= this.limits.topicMinMs) {
        this.rereading.delete(topic);
        continue;
      }
      pruneKeys(waiting.keys, routes, kept);
    }
    for (const [topic, deferred] of this.deferred) {
      const routes = this.routes.get(topic);
      if (routes) pruneKeys(deferred.keys, routes, kept);
      if (!routes || !deferred.keys.size) this.undefer(topic);
    }
  }

  /**
   * What was read the old way goes: until the new reading has read something, the state says unknown (as for an
   * entity not heard yet) rather than show a value the new reading might not give, and a value read the old way
   * might be wrong (another sensor's number, words that now mean the opposite). A device that retains its state
   * gives the new reading at once; one that does not, at its next report. Returns whether anything went.
   */
  private forget(state: CachedState, entity: Entity, changes: ReadingChanges): boolean {
    let went = false;
    if (changes.value === 'changed') {
      went = state.value !== undefined || state.frame !== undefined;
      state.value = undefined;
      if (state.frame) state.frame = undefined;
    }
    if (changes.attributes && state.attributes !== NO_ATTRIBUTES) {
      const left: Record<string, StateValue> = {};
      let any = false;
      for (const [name, v] of Object.entries(state.attributes)) {
        if (changes.attributes[name] === 'changed') went = true;
        else {
          left[name] = v;
          any = true;
        }
      }
      state.attributes = any ? left : NO_ATTRIBUTES;
    }
    if (changes.availability === 'changed') {
      this.availabilityBySource.delete(entity.id);
      // Without availability the entity is available (setDevices); with it, unknown until a source speaks.
      if (entity.availability) {
        went ||= state.available !== null;
        state.available = null;
        state.availabilityAt = undefined;
      }
    }
    if (state.value === undefined && state.attributes === NO_ATTRIBUTES && !state.frame) {
      state.updatedAt = undefined;
      state.retained = undefined;
    }
    return went;
  }

  get(entityId: string): EntityState | undefined {
    return this.states.get(entityId);
  }

  entity(entityId: string): Entity | undefined {
    return this.states.get(entityId)?.entity;
  }

  all(): EntityState[] {
    return [...this.states.values()];
  }

  /** Topics the cache listens to. */
  topics(): string[] {
    return [...this.routes.keys()];
  }

  /**
   * Feed one message (the MQTT connection calls this; tests may too). Never
   * throws: whatever goes wrong with one payload is logged (once a minute per
   * topic) and the entity keeps its previous state.
   */
  handle(topic: string, payload: Buffer, retained = false): void {
    const routes = this.routes.get(topic);
    if (!routes) return;
    if (this.rereading.size !== 0) {
      const waiting = this.rereading.get(topic);
      // A copy asked for that never came (the topic holds no retained message): over, this message is as any other.
      if (waiting && this.now() - waiting.at >= this.limits.topicMinMs) this.rereading.delete(topic);
      else if (waiting) {
        if (retained) return this.readAgain(topic, waiting, routes, payload);
        // Live: for every reader, as always; a retained copy still to come is older than this, for no one now.
        waiting.keys.clear();
      }
    }
    // Read by every reader: what waited its turn to be read again is read.
    if (this.deferred.size !== 0) this.undefer(topic);
    const message = new Message(topic, payload);
    // Most topics feed one entity's value or attribute: no set of changed entities to build for them.
    const only = routes.length === 1 ? routes[0]! : undefined;
    if (only && (!isRole(only) || only.role === 'attribute')) {
      const entity = isRole(only) ? only.entity : only;
      const changed = this.applySafely(only, entity, message, retained);
      if (!retained) this.heardFrom(entity, changed);
      if (changed) this.changed(topic, entity);
      return;
    }
    const changed = this.applyRoutes(routes, message, retained);
    if (!retained) {
      for (const route of routes) {
        if (!isRole(route)) this.heardFrom(route, changed.has(route));
        else if (route.role === 'attribute') this.heardFrom(route.entity, changed.has(route.entity));
        // A live availability message that left the entity online (read after it was applied): a connection, no report.
        else for (const entity of route.entities) if (this.states.get(entity.id)?.available === true) this.announced.set(entity.deviceId, this.now());
      }
    }
    for (const entity of changed) this.changed(topic, entity);
  }

  /**
   * A message for the readings of `routes` (those `only` names, when it names some): the entities it changed.
   */
  private applyRoutes(routes: Route[], message: Message, retained: boolean, only?: ReadonlySet<string>): Set<Entity> {
    const changed = new Set<Entity>();
    for (const route of routes) {
      if (!isRole(route)) {
        if ((!only || only.has(readKey('value', route.id))) && this.applySafely(route, route, message, retained)) changed.add(route);
      } else if (route.role === 'attribute') {
        if ((!only || only.has(readKey('attribute', route.entity.id, route.name))) && this.applySafely(route, route.entity, message, retained))
          changed.add(route.entity);
      } else {
        for (const entity of route.entities) {
          if ((!only || only.has(readKey('availability', entity.id))) && this.applySafely(route, entity, message, retained)) changed.add(entity);
        }
      }
    }
    return changed;
  }

  /**
   * A retained message of a topic subscribed again (setDevices): read by the readings read differently now, and by
   * them only. Another reader keeps what it has: this copy says nothing new to it, and may be older than a live
   * message it read since (after which it is no one's).
   */
  private readAgain(topic: string, waiting: Rereading, routes: Route[], payload: Buffer): void {
    if (--waiting.pending <= 0) this.rereading.delete(topic);
    // The copy readings of the topic waiting their turn wait for: theirs too.
    const deferred = this.deferred.size !== 0 ? this.undefer(topic) : undefined;
    if (deferred) for (const k of deferred) waiting.keys.add(k);
    if (!waiting.keys.size) return;
    const changed = this.applyRoutes(routes, new Message(topic, payload), true, waiting.keys);
    for (const entity of changed) this.changed(topic, entity);
  }

  /** When the device last announced itself online live (it connected, or reconnected), if it has. */
  lastAnnounced(deviceId: string): number | undefined {
    return this.announced.get(deviceId);
  }

  /** When the device last reported state live (epoch ms), if it has since Hearth started (availability is no report). */
  lastHeard(deviceId: string): number | undefined {
    return this.heard.get(deviceId);
  }

  /** The device left a command unanswered: each of its entities says so until it answers (clearSilent, heardFrom). */
  markSilent(deviceId: string, silence: Silence): void {
    this.silentDevices.add(deviceId);
    for (const [id, state] of this.states) {
      if (state.entity.deviceId !== deviceId || state.silent) continue;
      state.silent = silence;
      this.changed(id, state.entity);
    }
  }

  /** The device answered a command: it is reachable again. */
  clearSilent(deviceId: string): void {
    if (this.silentDevices.has(deviceId)) this.endSilence(deviceId, () => true);
  }

  /**
   * A live state report from the entity's device (a value, an attribute, a frame). An availability message is none:
   * it says the device (re)connected, or that its will was read, no sign that it takes commands (and anyone on the
   * broker can publish "online"), so it only notes the announcement (handle). A device that said nothing at all
   * since the command is back with a report; one that stopped answering after a failover only by answering a
   * command (clearSilent): it may publish without its subscription.
   */
  private heardFrom(entity: Entity, changing: boolean): void {
    this.heard.set(entity.deviceId, this.now());
    if (!this.silentDevices.has(entity.deviceId)) return;
    this.endSilence(entity.deviceId, (s) => s.cause === 'nothing', entity, changing);
  }

  private endSilence(deviceId: string, ends: (s: Silence) => boolean, by?: Entity, changing = false): void {
    let left = false;
    for (const [id, state] of this.states) {
      const other = state.entity;
      if (other.deviceId !== deviceId || !state.silent) continue;
      if (!ends(state.silent)) {
        left = true;
        continue;
      }
      state.silent = undefined;
      // The message's own change event carries it for the entity it changed.
      if (other !== by || !changing) this.changed(id, other);
    }
    if (!left) this.silentDevices.delete(deviceId);
  }

  private applySafely(route: Route, entity: Entity, message: Message, retained: boolean): boolean {
    try {
      return this.apply(route, entity, message, retained);
    } catch (err) {
      if (err instanceof PayloadError) this.reportMalformed(message.topic, entity, err);
      else this.reportMalformed(message.topic, entity, new PayloadError('failed', `could not use the payload: ${describeError(err)}`), err);
      return false;
    }
  }

  private changed(topic: string, entity: Entity): void {
    try {
      this.emit('change', this.states.get(entity.id)!, entity);
    } catch (err) {
      // A listener's bug is not the payload's fault: the new state stands, the error is logged.
      const suppressed = this.listenerErrors.take(topic);
      if (suppressed !== undefined) this.log.error({ err, topic, entity: entity.id, ...(suppressed ? { suppressed } : {}) }, 'a state listener failed');
    }
  }

  private apply(route: Route, entity: Entity, message: Message, retained: boolean): boolean {
    const state = this.states.get(entity.id)!;
    const at = this.now();
    if (!isRole(route)) {
      if (FRAME_KINDS.has(entity.kind)) {
        // An empty retained payload clears a topic; it is not a frame.
        if (message.payload.length === 0) return false;
        state.frame = { ...decodeFrame(entity, message.payload), at };
        state.updatedAt = at;
        state.retained = retained;
        return true;
      }
      const raw = entity.transform ? applyTransform(entity.transform, message) : message.read(entity.valuePath);
      // A JSON state without this entity's key (a partial update) is not an error.
      if (raw === undefined) return false;
      state.value = normalizeValue(entity, raw);
      state.updatedAt = at;
      state.retained = retained;
      return true;
    }
    if (route.role === 'availability') return this.applyAvailability(entity, route.source, message, state, at);
    const transform = entity.attributes[route.name]?.transform;
    const raw = transform ? applyTransform(transform, message) : message.read(route.path);
    if (raw === undefined) return false;
    // Its own object from the first attribute on (until then the shared empty one).
    if (state.attributes === NO_ATTRIBUTES) state.attributes = {};
    state.attributes[route.name] = normalizeAttribute(entity, route.name, raw);
    state.updatedAt = at;
    state.retained = retained;
    return true;
  }

  private applyAvailability(entity: Entity, source: AvailabilitySource, message: Message, state: EntityState, at: number): boolean {
    const raw = source.transform ? applyTransform(source.transform, message) : source.path ? readJsonPath(message.json(), source.path) : message.text();
    const word = String(raw ?? '').trim();
    let online: boolean;
    if (word === source.payloadAvailable) online = true;
    else if (word === source.payloadNotAvailable) online = false;
    else if (word === '')
      return false; // a cleared retained availability message
    else {
      throw new PayloadError(
        'bad_value',
        `availability ${JSON.stringify(word.slice(0, 40))} is neither ${JSON.stringify(source.payloadAvailable)} nor ${JSON.stringify(source.payloadNotAvailable)}`,
      );
    }
    const availability = entity.availability!;
    let available: boolean | null;
    // One source (nearly every device): it alone says, whatever the mode; no per-entity map of sources to keep.
    if (availability.mode === 'latest' || availability.sources.length <= 1) available = online;
    else {
      const words = this.availabilityBySource.get(entity.id) ?? [];
      const i = words.indexOf(source.topic);
      if (i >= 0) words[i + 1] = online;
      else this.availabilityBySource.set(entity.id, words.concat([source.topic, online]));
      available = this.combined(availability, this.availabilityBySource.get(entity.id)!);
    }
    const changed = available !== state.available;
    state.available = available;
    state.availabilityAt = at;
    return changed;
  }

  /** Several sources: `any` is online when one says so, `all` when every one does (unknown until each has spoken). */
  private combined(availability: NonNullable<Entity['availability']>, words: Array<string | boolean>): boolean | null {
    if (availability.mode === 'any') return words.some((w) => w === true);
    const known = availability.sources.map((s) => {
      const i = words.indexOf(s.topic);
      return i >= 0 ? (words[i + 1] as boolean) : undefined;
    });
    return known.includes(false) ? false : known.includes(undefined) ? null : true;
  }

  private reportMalformed(topic: string, entity: Entity, err: PayloadError, cause?: unknown): void {
    try {
      this.emit('malformed', topic, entity.id, err);
    } catch (listenerErr) {
      cause ??= listenerErr;
    }
    const now = this.now();
    const last = this.lastLogged.get(topic);
    if (last !== undefined && now - last < LOG_EVERY_MS) {
      this.suppressed.set(topic, (this.suppressed.get(topic) ?? 0) + 1);
      return;
    }
    const suppressed = this.suppressed.get(topic) ?? 0;
    this.suppressed.delete(topic);
    this.lastLogged.set(topic, now);
    this.log.warn(
      { topic, entity: entity.id, reason: err.reason, ...(suppressed ? { suppressed } : {}), ...(cause ? { err: cause } : {}) },
      `skipped a payload: ${err.message}`,
    );
  }

  close(): void {
    this.source.off('message', this.onMessage);
    this.source.off('state', this.onState);
    clearTimeout(this.drainTimer);
    clearTimeout(this.deferredLineTimer);
    this.drainTimer = this.deferredLineTimer = undefined;
  }
}

/** One reading of an entity, as StateCache.rereading names it (by ids: the next rebuild makes new routes). */
function readKey(part: 'value' | 'attribute' | 'availability', entityId: string, attribute = ''): string {
  return `${part}\u0000${entityId}\u0000${attribute}`;
}

/**
 * What of an entity is read otherwise (readingChanges) on a topic `held` already, by topic, to read from the broker's
 * copy (a topic new to the cache is subscribed: its retained message comes for every reader). Of availability moved,
 * the sources on topics it did not read before (`was`: the entity as it was): the others' words stand.
 */
function readAgainOf(entity: Entity, changes: ReadingChanges, was: Entity | undefined, held: ReadonlySet<string>, again: Map<string, Set<string>>): void {
  if (changes.value && entity.stateTopic && held.has(entity.stateTopic)) readAgainOn(again, entity.stateTopic, readKey('value', entity.id));
  for (const name in changes.attributes) {
    // One no longer read has no topic to read.
    const attr = Object.hasOwn(entity.attributes, name) ? entity.attributes[name] : undefined;
    const topic = attr ? (attr.topic ?? entity.stateTopic) : undefined;
    if (topic && held.has(topic)) readAgainOn(again, topic, readKey('attribute', entity.id, name));
  }
  if (changes.availability) {
    const read = changes.availability === 'moved' ? was?.availability?.sources : undefined;
    for (const s of entity.availability?.sources ?? []) {
      if (held.has(s.topic) && !read?.some((r) => r.topic === s.topic)) readAgainOn(again, s.topic, readKey('availability', entity.id));
    }
  }
}

/** The entity a readKey names. */
function entityOfKey(key: string): string {
  return key.slice(key.indexOf('\u0000') + 1, key.lastIndexOf('\u0000'));
}

/** How many readings a topic's routes are (an availability route, one per entity sharing it). */
function readingsOn(routes: readonly Route[]): number {
  let n = 0;
  for (const route of routes) n += isRole(route) && route.role === 'availability' ? route.entities.length : 1;
  return n;
}

/** Keep of `keys` those of entities kept, and, when there are more than the topic's readings, those it has. */
function pruneKeys(keys: Set<string>, routes: readonly Route[], kept: ReadonlySet<string>): void {
  for (const key of keys) if (!kept.has(entityOfKey(key))) keys.delete(key);
  if (keys.size > readingsOn(routes)) {
    const on = readKeysOf(routes);
    for (const key of keys) if (!on.has(key)) keys.delete(key);
  }
}

/** The readKeys of a topic's routes. */
function readKeysOf(routes: readonly Route[]): Set<string> {
  const keys = new Set<string>();
  for (const route of routes) {
    if (!isRole(route)) keys.add(readKey('value', route.id));
    else if (route.role === 'attribute') keys.add(readKey('attribute', route.entity.id, route.name));
    else for (const entity of route.entities) keys.add(readKey('availability', entity.id));
  }
  return keys;
}

function readAgainOn(again: Map<string, Set<string>>, topic: string, key: string): void {
  const keys = again.get(topic);
  if (keys) keys.add(key);
  else again.set(topic, new Set([key]));
}

/** Every topic's routes, and the entities, of a set of devices. */
function routesOf(devices: Device[]): { routes: Map<string, Route[]>; entities: Entity[] } {
  const routes = new Map<string, Route[]>();
  const add = (topic: string, route: Route) => {
    const list = routes.get(topic);
    if (list) list.push(route);
    else routes.set(topic, [route]);
  };
  const entities: Entity[] = [];
  const availability = new Map<AvailabilitySource, AvailabilityRoute>();
  for (const device of devices) {
    for (const entity of device.entities) {
      entities.push(entity);
      if (entity.stateTopic) add(entity.stateTopic, entity);
      for (const [name, attr] of Object.entries(entity.attributes)) {
        add(attr.topic ?? entity.stateTopic ?? '', { role: 'attribute', entity, name, path: attr.path });
      }
      for (const source of entity.availability?.sources ?? []) {
        const route = availability.get(source);
        if (route) route.entities.push(entity);
        else {
          const first: AvailabilityRoute = { role: 'availability', source, entities: [entity] };
          availability.set(source, first);
          add(source.topic, first);
        }
      }
    }
  }
  routes.delete('');
  // A list that grew by push has room for ~17 routes; most topics feed one to five: each list at its size
  // (for 5,000 topics, ~1 MiB less).
  for (const [topic, list] of routes) if (list.length > 1) routes.set(topic, list.slice());
  for (const route of availability.values()) if (route.entities.length > 1) route.entities = route.entities.slice();
  return { routes, entities };
}

function describeError(err: unknown): string {
  if (err instanceof RangeError) return 'it is nested too deeply';
  return err instanceof Error ? err.message : String(err);
}
