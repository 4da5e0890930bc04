// Who may command a topic, and who reads one (assignStateTopicReaders: a state topic is one device's too). Every command topic is owned by one entity: the
// first to claim it in rank order (device files first, then discovered
// entities in the order they were first seen). An entity that claims a topic
// another device owns is refused whole, so a discovered "light" cannot put
// itself on the front door lock's command topic. Entities of the owner's own
// device from the same source may share it: Zigbee2MQTT devices take every
// command as JSON on one `set` topic. (What such a sibling sends is still
// held to the rules of the words it sends: see dangerous-words.ts.)
//
// An owner keeps its topics while Hearth remembers it, present or away (gone from Zigbee2MQTT's list for a
// moment, its discovery config retracted, a bridge restarted with a partial list, a restart of Hearth): a
// newcomer asking for them is refused, as for a present owner. Commands, rules, approvals and the audit name an
// entity by its id: the topic stays with that id. The same entity (its device's identity) takes it back when it
// returns. An owner is gone only when a person says so (`hearth devices forget`) or when it is forgotten unseen
// (`discovery.remember_days`); nothing on the broker can say so.
//
// No entity commands a topic Hearth reads (any entity's state, attribute or
// availability topic) nor a source's control topic (discovery prefixes,
// Zigbee2MQTT's bridge/#, Homie's $-topics): a switch aimed at the lock's state
// topic would make Hearth write "unlocked" there; a button aimed at
// bridge/request/permit_join would make Hearth open the Zigbee network.
import { commandTopicsOf } from './commands.js';
import type { SourceTopics } from './discovery/index.js';
import { type Device, type Entity, stateTopicsOf } from './model.js';

export interface TopicClaim {
  entity: Entity;
  /** Where the entity comes from (the registry's source name). */
  source: string;
}

/** An entity Hearth remembers holding command topics, that no source has now. */
export interface AwayOwner {
  entityId: string;
  topics: readonly string[];
  /** Present, but moved by its source to topics it never held: it holds these until a person confirms the move. */
  moving?: boolean;
}

export interface TopicRefusal {
  /**
   * What is refused: `command` a command topic (held by `owner`, or one no entity may command: `reason`); `read` a
   * state topic another device reads (`owner`, `awayOwner`); `source` a topic a discovery source reads itself, as
   * the entity's state or (`availability`) its availability (`reason`); `moved` a move its source made, waiting for
   * a person (`movedFrom`).
   */
  kind: 'command' | 'read' | 'source' | 'moved';
  topic: string;
  /** The entity that owns the topic (absent when the topic is a control topic or one Hearth reads, or its owner is away). */
  owner?: Entity;
  /** The id of the owner when it is away: remembered, not in the home now (or present and moving: `ownerMoving`). */
  awayOwner?: string;
  /** The away owner is in the home, moved by its source: it holds its old topics until a person confirms the move. */
  ownerMoving?: boolean;
  /** The refused entity is a mover: the topics it holds, kept while its move to `topic` waits for a person. */
  movedFrom?: readonly string[];
  /** The owner's command topic when the claimed one is above or below it rather than the same. */
  ownerTopic?: string;
  /** Why, in words, when there is no owner: "a control topic of zigbee2mqtt", "the state topic of lock.x". */
  reason?: string;
  /** The claimed topic is a state topic `owner` reads (another device's readings), not a command topic; or a source's (`kind`). */
  read?: boolean;
  /** A `source` refusal: the entity reads the topic as its availability, not its state. */
  availability?: boolean;
  /** The entity refused for claiming it. */
  refused: Entity;
}

/** Why no entity may command this topic, or undefined. Control topics come from the sources' configuration. */
export type ReservedTopics = (topic: string) => string | undefined;

/** Control topics every source has, whatever the configuration: Homie's and the broker's `$` topics. */
export const dollarTopics: ReservedTopics = (topic) =>
  topic.split('/').some((level) => level.startsWith('$')) ? 'a $ control topic (Homie, the broker)' : undefined;

/** Topics Hearth reads, each with what it is: never a command topic. */
export function readTopicsOf(devices: readonly Device[]): Map<string, string> {
  const read = new Map<string, string>();
  for (const d of devices) {
    for (const s of d.availability?.sources ?? []) if (!read.has(s.topic)) read.set(s.topic, `the availability topic of ${d.id}`);
    for (const e of d.entities) for (const t of stateTopicsOf(e)) if (!read.has(t)) read.set(t, `the state topic of ${e.id}`);
  }
  return read;
}

export interface TopicOwners {
  /** topic -> owning entity (of the home: the topics of owners that are away are theirs, not listed). */
  owners: Map<string, Entity>;
  /** entity id -> why it was refused. */
  refused: Map<string, TopicRefusal>;
}

/** The device part of an entity id (`lamp.light` -> `lamp`): entity ids are `<device id>.<key>`. */
export function deviceOfEntityId(entityId: string): string {
  return entityId.split(/[.#]/, 1)[0]!;
}

/** A claim as ownership sees it: an entity of the home, or one that is away (its device known by its id only). */
type Claimant = { claim: TopicClaim; away?: undefined } | { claim?: undefined; away: AwayOwner };
const idOf = (c: Claimant) => (c.claim ? c.claim.entity.id : c.away.entityId);
const deviceOf = (c: Claimant) => (c.claim ? c.claim.entity.deviceId : deviceOfEntityId(c.away.entityId));
const topicsOf = (c: Claimant): readonly string[] => (c.claim ? commandTopicsOf(c.claim.entity) : c.away.topics);

/**
 * The discovered claims that move an owner: an entity remembered holding command topics that now claims one it
 * never held (a person's confirmation makes what it claims what it holds: DeviceRegistry.confirmMove). Each with
 * the topics it holds.
 */
export function moversOf(
  found: readonly TopicClaim[],
  remembered: ReadonlyMap<string, readonly string[]>,
): Map<string, { claim: TopicClaim; held: readonly string[] }> {
  const movers = new Map<string, { claim: TopicClaim; held: readonly string[] }>();
  const deviceKey = (c: TopicClaim) => `${c.source}\u0000${c.entity.deviceId}`;
  // The set topics each device's other entities than scenes claim now: a scene's endpoint twin of one of them that
  // it held is its device's own place (endpointTwins).
  const setTopics = new Map<string, string[]>();
  for (const c of found) {
    if (c.entity.kind === 'scene') continue;
    for (const t of commandTopicsOf(c.entity)) {
      if (!t.endsWith('/set')) continue;
      const key = deviceKey(c);
      const sets = setTopics.get(key);
      if (sets) sets.push(t);
      else setTopics.set(key, [t]);
    }
  }
  const unheld = (claim: TopicClaim, held: readonly string[]) =>
    commandTopicsOf(claim.entity).some(
      (t) => !held.includes(t) && !(claim.entity.kind === 'scene' && held.some((h) => endpointTwins(claim.source, setTopics.get(deviceKey(claim)), h, t))),
    );
  for (const claim of found) {
    const held = remembered.get(claim.entity.id);
    if (!held?.length) continue;
    if (unheld(claim, held)) movers.set(claim.entity.id, { claim, held });
  }
  // A new entity of a moved device goes where the device went: it waits with it (else a forged list renaming the
  // lock could add an expose to it on the forger's topic, under the lock's name).
  const moved = new Set([...movers.values()].map((m) => deviceKey(m.claim)));
  for (const claim of found) {
    if (movers.has(claim.entity.id) || !moved.has(deviceKey(claim))) continue;
    const held = remembered.get(claim.entity.id) ?? [];
    if (unheld(claim, held)) movers.set(claim.entity.id, { claim, held });
  }
  return movers;
}

/**
 * Whether a Zigbee2MQTT scene that held `held` and claims `claimed` stays where it was: both are the set topic of
 * its device as the device is named now (`deviceSets`: the `<device>/set` its other entities claim) or one of that
 * device's endpoints' (`<device>/<1-3 digits>/set`; never two endpoints'), which Zigbee2MQTT sends to the same device. So a scene recalled
 * on its endpoint's topic since the list showed the device's second endpoint (a Hue bulb's 11 and 242) has not moved
 * and needs no confirmation. A device renamed (its other entities claim another set topic, and move), a name ending
 * in `/<digits>` (which Zigbee2MQTT refuses: only a forged list has one), a device of scenes alone: no twins.
 */
export function endpointTwins(source: string, deviceSets: readonly string[] | undefined, held: string, claimed: string): boolean {
  if (source !== 'zigbee2mqtt' || !deviceSets) return false;
  const under = (base: string, t: string) => t === `${base}/set` || (t.startsWith(`${base}/`) && /^\d{1,3}\/set$/.test(t.slice(base.length + 1)));
  return deviceSets.some((own) => {
    const base = own.slice(0, -'/set'.length);
    // The device's own set topic on one side: from one endpoint to another is a move (the scene is not where it was).
    return under(base, held) && under(base, claimed) && (held === own || claimed === own);
  });
}

/**
 * The claims in the order they are given their topics: device files first (`outranking`), then every entity
 * that holds what it claims (a discovered entity claiming only topics remembered as its own, the owners that
 * are away, and the movers, which hold their old topics and claim nothing), then the rest (newcomers, and
 * entities that held no command topic before); each part in rank order (`rank`: first seen). So a
 * newcomer never takes a topic an entity holds, present, away or moved, whatever their ranks. `movers` (moversOf)
 * are refused by the caller.
 */
export function orderWithHolders(
  outranking: readonly TopicClaim[],
  found: readonly TopicClaim[],
  remembered: ReadonlyMap<string, readonly string[]>,
  rank: (ids: readonly string[]) => ReadonlyMap<string, number>,
  movers: ReadonlyMap<string, { held: readonly string[] }> = new Map(),
): Claimant[] {
  const present = new Set([...outranking, ...found].map((c) => c.entity.id));
  const holders: Claimant[] = [];
  const others: Claimant[] = [];
  for (const claim of found) {
    const moving = movers.get(claim.entity.id);
    if (moving) {
      holders.push({ away: { entityId: claim.entity.id, topics: moving.held, moving: true } });
      continue;
    }
    const held = remembered.get(claim.entity.id);
    const topics = commandTopicsOf(claim.entity);
    (held && topics.length && topics.every((t) => held.includes(t)) ? holders : others).push({ claim });
  }
  for (const [entityId, topics] of remembered) if (topics.length && !present.has(entityId)) holders.push({ away: { entityId, topics } });
  const ranks = rank([...holders, ...others].map(idOf));
  // Each claimant's rank and id looked up once, not at each of a sort's comparisons (10,000 in a big home).
  const byRank = (list: Claimant[]): Claimant[] =>
    list
      .map((c) => ({ c, id: idOf(c), r: ranks.get(idOf(c)) ?? 0 }))
      .sort((a, b) => a.r - b.r || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map((x) => x.c);
  return [...outranking.map((claim) => ({ claim })), ...byRank(holders), ...byRank(others)];
}

/**
 * Who reads each state topic. A topic an entity reads its state on (stateTopicsOf: its state and attribute topics)
 * is read by one device: else a forged "Front door contact" reading the lock's state topic shows the lock's readings
 * under its own name (reads, history, chat). The reader, in this order:
 * - a device of a person's files that takes commands (a hand-written lock), for its own state topic: a discovered
 *   entity of another device reading it is refused whole. What a file reads besides (a read-only file entity: an
 *   extra sensor off a Zigbee2MQTT or Tasmota JSON topic, as docs/devices.md shows; an attribute read off another
 *   device's topic) claims nothing: a person's config is trusted to read, and must not make the device it reads
 *   from go away. Such a topic is the first discovered device's to read it, as any other;
 * - a discovered device that names itself and holds what it reads (`remembered` as its own), the first in rank
 *   order (`found` comes in rank order); then one that is away, or moving (a remembered entity not in `found`): a
 *   state topic stays the device's that read it while Hearth remembers that device (gone from Zigbee2MQTT's list for
 *   a moment, a restart of Hearth), until it is forgotten, and it takes it back when it returns; then the other
 *   discovered devices that name themselves, in rank order. Another device's entity reading their topics is refused
 *   whole. Entities of one device from one source share (Zigbee2MQTT's one JSON topic per device, Tasmota's
 *   `tele/<dev>/SENSOR` read by several entities), and an away entity with the entities of its device;
 * - configs of one source that name no device (`unnamed`: device ids) share among themselves, and never take a
 *   topic a named device reads, whichever came first (so they are not remembered: registry.ts).
 * No one, a person's files included, reads a topic a discovery source reads itself (`reserved`: sourceTopics, in
 * discovery/index.ts) as its state, nor as its availability but a Homie device's `$state` (what Homie entities read
 * their availability on): an entity reading one is refused whole, with the reason. The state cache reads
 * availability topics as it reads state topics, and reads them again alike (state-cache.ts).
 * Returns the refused, by entity id.
 */
export function assignStateTopicReaders(
  allFiles: readonly TopicClaim[],
  allFound: readonly TopicClaim[],
  unnamed: ReadonlySet<string> = new Set(),
  remembered: ReadonlyMap<string, readonly string[]> = new Map(),
  moving: ReadonlySet<string> = new Set(),
  reserved: SourceTopics = () => undefined,
): Map<string, TopicRefusal> {
  type Reader = { claim: TopicClaim; file: boolean; away?: undefined } | { claim?: undefined; file: false; away: string };
  const readers = new Map<string, Reader>();
  const refused = new Map<string, TopicRefusal>();
  // A topic a discovery source reads (Zigbee2MQTT's bridge/devices, a discovery config) is no entity's state topic
  // nor availability topic: what comes there is the source's, and reading it again (a reading changed:
  // state-cache.ts) would have the broker replay it to the connection, so to the source too, which would convert its
  // whole list again.
  const topicsOf = new Map<TopicClaim, string[]>();
  const control = (claim: TopicClaim, keep: boolean): boolean => {
    const topics = stateTopicsOf(claim.entity);
    // Each claim's topics, asked once (the passes below ask them up to three times; 10,000 entities in a big home).
    if (keep) topicsOf.set(claim, topics);
    for (const t of topics) {
      const source = reserved(t);
      if (source === undefined) continue;
      refused.set(claim.entity.id, { kind: 'source', topic: t, reason: source.reason, read: true, refused: claim.entity });
      return true;
    }
    for (const s of claim.entity.availability?.sources ?? []) {
      const source = reserved(s.topic);
      // A Homie device's $state is its entities' availability: the source reads it as such too.
      if (source === undefined || source.kind === 'state') continue;
      refused.set(claim.entity.id, { kind: 'source', topic: s.topic, reason: source.reason, read: true, availability: true, refused: claim.entity });
      return true;
    }
    return false;
  };
  const files = allFiles.filter((c) => !control(c, false));
  const found = allFound.filter((c) => !control(c, true));
  for (const claim of files) {
    const own = commandTopicsOf(claim.entity).length ? claim.entity.stateTopic : undefined;
    if (own !== undefined && !readers.has(own)) readers.set(own, { claim, file: true });
  }
  // One device of one source; or configs of one source that name no device (Device.unnamed), among themselves. An
  // entity that is away is known by its id alone: its device's entities share with it, from whatever source.
  const ours = (reader: Reader, claim: TopicClaim) => {
    if (reader.away !== undefined) return deviceOfEntityId(reader.away) === claim.entity.deviceId;
    const { claim: by, file } = reader;
    return (
      !file &&
      by.source === claim.source &&
      (by.entity.deviceId === claim.entity.deviceId || (unnamed.has(by.entity.deviceId) && unnamed.has(claim.entity.deviceId)))
    );
  };
  const read = (claim: TopicClaim) => {
    const topics = topicsOf.get(claim)!;
    const taken = topics.find((t) => {
      const reader = readers.get(t);
      return reader && !ours(reader, claim);
    });
    if (taken) {
      const reader = readers.get(taken)!;
      refused.set(claim.entity.id, {
        kind: 'read',
        topic: taken,
        ...(reader.claim ? { owner: reader.claim.entity } : { awayOwner: reader.away, ...(moving.has(reader.away) ? { ownerMoving: true } : {}) }),
        read: true,
        refused: claim.entity,
      });
      return;
    }
    for (const t of topics) if (!readers.has(t)) readers.set(t, { claim, file: false });
  };
  const holds = (claim: TopicClaim) => {
    const held = remembered.get(claim.entity.id);
    const topics = topicsOf.get(claim)!;
    return !!held && topics.length > 0 && topics.every((t) => held.includes(t));
  };
  const named = found.filter((c) => !unnamed.has(c.entity.deviceId));
  const holding = named.filter(holds);
  const present = new Set<string>();
  for (const c of files) present.add(c.entity.id);
  for (const c of found) present.add(c.entity.id);
  for (const claim of holding) read(claim);
  for (const [entityId, topics] of remembered) {
    if (present.has(entityId)) continue;
    for (const t of topics) if (!readers.has(t)) readers.set(t, { file: false, away: entityId });
  }
  const held = new Set(holding);
  for (const claim of named) if (!held.has(claim)) read(claim);
  for (const claim of found) if (unnamed.has(claim.entity.deviceId)) read(claim);
  return refused;
}

/**
 * Give each command topic to its first claimant; `claims` come in rank order (plain claims, or the order
 * orderWithHolders gives, owners that are away included: they hold their topics and are never refused). `forbidden`
 * says why a topic may not be commanded at all (a topic Hearth reads, a control topic). A topic below an owned one
 * (`<cmd>/state`) is its owner's too, and so is one above it: a device that takes commands on `<cmd>` takes
 * them on `<cmd>/state` (Zigbee2MQTT does), so another device's entity on either would command it.
 */
export function assignTopicOwners(claims: readonly (TopicClaim | Claimant)[], forbidden: ReservedTopics = () => undefined): TopicOwners {
  const owners = new Map<string, Claimant>();
  // Every level above an owned topic -> the first claim owning a topic below it, and the first of another device.
  const below = new Map<string, { first: Claimant; other?: Claimant }>();
  const refused = new Map<string, TopicRefusal>();
  // Entities of one device from one source share; an owner that is away is known by its device id alone.
  const sameDevice = (a: Claimant, b: Claimant) => deviceOf(a) === deviceOf(b) && (!a.claim || !b.claim || a.claim.source === b.claim.source);
  /** Another device's claim on this topic, above it or below it, with the topic it owns. */
  const heldBy = (claim: Claimant, topic: string): { held: Claimant; at: string } | undefined => {
    const exact = owners.get(topic);
    if (exact && !sameDevice(exact, claim)) return { held: exact, at: topic };
    for (let i = topic.lastIndexOf('/'); i > 0; i = topic.lastIndexOf('/', i - 1)) {
      const above = owners.get(topic.slice(0, i));
      if (above && !sameDevice(above, claim)) return { held: above, at: topic.slice(0, i) };
    }
    const under = below.get(topic);
    const held = under && (!sameDevice(under.first, claim) ? under.first : under.other);
    if (held) return { held, at: topicsOf(held).find((t) => t.startsWith(`${topic}/`)) ?? topic };
    return undefined;
  };
  for (const given of claims) {
    const claimant: Claimant = 'entity' in given ? { claim: given } : given;
    const { claim } = claimant;
    const topics = topicsOf(claimant);
    if (claim) {
      const aimed = topics.map((topic) => ({ topic, reason: forbidden(topic) })).find((t) => t.reason);
      if (aimed) {
        refused.set(claim.entity.id, { kind: 'command', topic: aimed.topic, reason: aimed.reason, refused: claim.entity });
        continue;
      }
    }
    const conflict = topics.map((topic) => ({ topic, found: heldBy(claimant, topic) })).find(({ found }) => found);
    if (conflict?.found) {
      // An owner that is away and meets one ranked before it (a device file) holds nothing: it is not in the home.
      if (!claim) continue;
      const { held, at } = conflict.found;
      refused.set(claim.entity.id, {
        kind: 'command',
        topic: conflict.topic,
        ...(held.claim ? { owner: held.claim.entity } : { awayOwner: held.away.entityId, ...(held.away.moving ? { ownerMoving: true } : {}) }),
        ...(at !== conflict.topic ? { ownerTopic: at } : {}),
        refused: claim.entity,
      });
      continue;
    }
    for (const topic of topics) {
      if (owners.has(topic)) continue;
      owners.set(topic, claimant);
      for (let i = topic.lastIndexOf('/'); i > 0; i = topic.lastIndexOf('/', i - 1)) {
        const level = topic.slice(0, i);
        const entry = below.get(level);
        if (!entry) below.set(level, { first: claimant });
        else if (!entry.other && !sameDevice(entry.first, claimant)) entry.other = claimant;
      }
    }
  }
  return { owners: new Map([...owners].flatMap(([t, c]) => (c.claim ? [[t, c.claim.entity] as const] : []))), refused };
}
