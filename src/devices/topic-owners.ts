// Who may command a topic. Every command topic is owned by one entity: the
// first to claim it in rank order (device files first, then discovered
// entities in the order they were first seen). An entity that claims a topic
// another device owns is refused whole, so a discovered "light" cannot put
// itself on the front door lock's command topic. Entities of the owner's own
// device from the same source may share it: Zigbee2MQTT devices take every
// command as JSON on one `set` topic. (What such a sibling sends is still
// held to the rules of the words it sends: see dangerous-words.ts.)
//
// No entity commands a topic Hearth reads (any entity's state, attribute or
// availability topic) nor a source's control topic (discovery prefixes,
// Zigbee2MQTT's bridge/#, Homie's $-topics): a switch aimed at the lock's state
// topic would make Hearth write "unlocked" there; a button aimed at
// bridge/request/permit_join would make Hearth open the Zigbee network.
import { commandTopicsOf } from './commands.js';
import { type Device, type Entity, stateTopicsOf } from './model.js';

export interface TopicClaim {
  entity: Entity;
  /** Where the entity comes from (the registry's source name). */
  source: string;
}

export interface TopicRefusal {
  topic: string;
  /** The entity that owns the topic (absent when the topic is a control topic or one Hearth reads). */
  owner?: Entity;
  /** The owner's command topic when the claimed one is above or below it rather than the same. */
  ownerTopic?: string;
  /** Why, in words, when there is no owner: "a control topic of zigbee2mqtt", "the state topic of lock.x". */
  reason?: string;
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
  /** topic -> owning entity. */
  owners: Map<string, Entity>;
  /** entity id -> why it was refused. */
  refused: Map<string, TopicRefusal>;
}

/**
 * Give each command topic to its first claimant; `claims` come in rank order. `forbidden` says why a
 * topic may not be commanded at all (a topic Hearth reads, a control topic). A topic below an owned one
 * (`<cmd>/state`) is its owner's too, and so is one above it: a device that takes commands on `<cmd>` takes
 * them on `<cmd>/state` (Zigbee2MQTT does), so another device's entity on either would command it.
 */
export function assignTopicOwners(claims: readonly TopicClaim[], forbidden: ReservedTopics = () => undefined): TopicOwners {
  const owners = new Map<string, TopicClaim>();
  // Every level above an owned topic -> the first claim owning a topic below it, and the first of another device.
  const below = new Map<string, { first: TopicClaim; other?: TopicClaim }>();
  const refused = new Map<string, TopicRefusal>();
  const sameDevice = (a: TopicClaim, b: TopicClaim) => a.entity.deviceId === b.entity.deviceId && a.source === b.source;
  /** Another device's claim on this topic, above it or below it, with the topic it owns. */
  const heldBy = (claim: TopicClaim, topic: string): { held: TopicClaim; at: string } | undefined => {
    const exact = owners.get(topic);
    if (exact && !sameDevice(exact, claim)) return { held: exact, at: topic };
    for (let i = topic.lastIndexOf('/'); i > 0; i = topic.lastIndexOf('/', i - 1)) {
      const above = owners.get(topic.slice(0, i));
      if (above && !sameDevice(above, claim)) return { held: above, at: topic.slice(0, i) };
    }
    const under = below.get(topic);
    const held = under && (!sameDevice(under.first, claim) ? under.first : under.other);
    if (held) return { held, at: commandTopicsOf(held.entity).find((t) => t.startsWith(`${topic}/`)) ?? topic };
    return undefined;
  };
  for (const claim of claims) {
    const topics = commandTopicsOf(claim.entity);
    const aimed = topics.map((topic) => ({ topic, reason: forbidden(topic) })).find((t) => t.reason);
    if (aimed) {
      refused.set(claim.entity.id, { topic: aimed.topic, reason: aimed.reason, refused: claim.entity });
      continue;
    }
    const conflict = topics.map((topic) => ({ topic, found: heldBy(claim, topic) })).find(({ found }) => found);
    if (conflict?.found) {
      const { held, at } = conflict.found;
      refused.set(claim.entity.id, { topic: conflict.topic, owner: held.entity, ...(at !== conflict.topic ? { ownerTopic: at } : {}), refused: claim.entity });
      continue;
    }
    for (const topic of topics) {
      if (owners.has(topic)) continue;
      owners.set(topic, claim);
      for (let i = topic.lastIndexOf('/'); i > 0; i = topic.lastIndexOf('/', i - 1)) {
        const level = topic.slice(0, i);
        const entry = below.get(level);
        if (!entry) below.set(level, { first: claim });
        else if (!entry.other && !sameDevice(entry.first, claim)) entry.other = claim;
      }
    }
  }
  return { owners: new Map([...owners].map(([t, c]) => [t, c.entity])), refused };
}
