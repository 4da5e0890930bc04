// Who may command a topic. Every command topic is owned by one entity: the
// first to claim it in rank order (device files first, then discovered
// entities in the order they were first seen). An entity that claims a topic
// another device owns is refused whole, so a discovered "light" cannot put
// itself on the front door lock's command topic. Entities of the owner's own
// device from the same source may share it: Zigbee2MQTT devices take every
// command as JSON on one `set` topic. (What such a sibling sends is still
// held to the rules of the words it sends: see dangerous-words.ts.)
import { commandTopicsOf } from './commands.js';
import type { Entity } from './model.js';

export interface TopicClaim {
  entity: Entity;
  /** Where the entity comes from (the registry's source name). */
  source: string;
}

export interface TopicRefusal {
  topic: string;
  /** The entity that owns the topic. */
  owner: Entity;
  /** The entity refused for claiming it. */
  refused: Entity;
}

export interface TopicOwners {
  /** topic -> owning entity. */
  owners: Map<string, Entity>;
  /** entity id -> why it was refused. */
  refused: Map<string, TopicRefusal>;
}

/** Give each command topic to its first claimant; `claims` come in rank order. */
export function assignTopicOwners(claims: readonly TopicClaim[]): TopicOwners {
  const owners = new Map<string, { claim: TopicClaim }>();
  const refused = new Map<string, TopicRefusal>();
  for (const claim of claims) {
    const topics = commandTopicsOf(claim.entity);
    const conflict = topics
      .map((topic) => ({ topic, held: owners.get(topic) }))
      .find(({ held }) => held && !(held.claim.entity.deviceId === claim.entity.deviceId && held.claim.source === claim.source));
    if (conflict) {
      refused.set(claim.entity.id, { topic: conflict.topic, owner: conflict.held!.claim.entity, refused: claim.entity });
      continue;
    }
    for (const topic of topics) if (!owners.has(topic)) owners.set(topic, { claim });
  }
  return { owners: new Map([...owners].map(([t, o]) => [t, o.claim.entity])), refused };
}
