// An entity left out for its command topic (or a state topic another device reads), as every door says it: the page, `hearth devices`, the HTTP API.
import type { Bridge } from '../bridge.js';
import { deviceOfEntityId } from '../devices/topic-owners.js';

/** An entity left out for its command topic: whose topic it is (an owner in the home, or one that is away), or why none may command it. */
export interface RefusedClaimJson {
  entity: string;
  name: string;
  kind: string;
  device: string;
  /** The command topic it claimed (or, with `read`, the state topic; with `refusal` `source`, maybe its availability topic). */
  topic: string;
  /**
   * Why, as a kind: `command` its command topic (held by `owner`, or one none may command: `reason`); `read` a state
   * topic another device reads (`owner`); `source` a topic a discovery source reads itself, as its state or
   * (`availability`) its availability (`reason`); `moved` its source moved it (`movedFrom`).
   */
  refusal: 'command' | 'read' | 'source' | 'moved';
  /** With `refusal` `source`: the topic is the one it reads its availability on. */
  availability: boolean;
  /** The topic is a state topic `owner` reads: the entity would show that device's readings as its own. */
  read: boolean;
  /** The entity holding the topic, when one does. */
  owner: string | null;
  /** The owner is away: remembered, no source has it now (`hearth devices forget <ownerDevice>` once it is really gone). */
  ownerAway: boolean;
  /** The owner is in the home, moved by its source elsewhere: it holds this topic until a person confirms its move. */
  ownerMoving: boolean;
  ownerDevice: string | null;
  /** Why no entity may command the topic, when no entity holds it ("the state topic of lock.x"). */
  reason: string | null;
  /**
   * The entity itself was moved by its source (a rename in Zigbee2MQTT, or a forged message) from these topics,
   * which it keeps, to `topic`, which it gets once a person confirms (`hearth devices confirm-move <device>`).
   */
  movedFrom: string[] | null;
  /** All of it in words, as `hearth devices` says it. */
  words: string;
}

/** The registry's refused claims, as data. */
export function refusedClaimsJson(bridge: Bridge): RefusedClaimJson[] {
  return bridge.registry.refusedClaims().map((r) => {
    const json = {
      entity: r.refused.id,
      name: r.refused.name,
      kind: r.refused.kind,
      device: r.refused.deviceId,
      topic: r.topic,
      refusal: r.kind,
      availability: !!r.availability,
      read: !!r.read,
      owner: r.owner?.id ?? r.awayOwner ?? null,
      ownerAway: !!r.awayOwner && !r.ownerMoving,
      ownerMoving: !!r.ownerMoving,
      ownerDevice: r.owner?.deviceId ?? (r.awayOwner ? deviceOfEntityId(r.awayOwner) : null),
      reason: r.reason ?? null,
      movedFrom: r.movedFrom ? [...r.movedFrom] : null,
    };
    return { ...json, words: refusedClaimWords(json) };
  });
}

/** Why an entity has no command, in words (`hearth devices`, the page). */
export function refusedClaimWords(r: Omit<RefusedClaimJson, 'words'>): string {
  if (r.refusal === 'moved' && r.movedFrom)
    return `its source moved it to ${r.topic}${r.movedFrom.length ? ` from ${r.movedFrom.join(', ')}` : ''} (a rename in Zigbee2MQTT, or a forged message: on the broker they look the same); it keeps ${r.movedFrom.length ? 'its old topic' : 'no topic'} and gets no command until an owner confirms: if you renamed it, \`hearth devices confirm-move ${r.device}\``;
  if (r.refusal === 'source')
    return `its ${r.availability ? 'availability' : 'state'} topic ${r.topic} is ${r.reason}: what comes there is that source's, never an entity's ${r.availability ? 'availability' : 'state'}`;
  if (r.owner && r.read && r.ownerMoving)
    return `its state topic ${r.topic} is read by ${r.owner}, which its source moved elsewhere; an owner has not confirmed that move`;
  if (r.owner && r.read && r.ownerAway)
    return `its state topic ${r.topic} is read by ${r.ownerDevice} (${r.owner}), which is away; if that device is really gone, \`hearth devices forget ${r.ownerDevice}\` frees it`;
  if (r.owner && r.read)
    return `its state topic ${r.topic} is read by ${r.owner} of device ${r.ownerDevice}: what comes there is that device's reading, not this one's`;
  if (r.owner && r.ownerMoving)
    return `its command topic ${r.topic} is held by ${r.owner}, which its source moved elsewhere; an owner has not confirmed that move`;
  if (r.owner && r.ownerAway)
    return `its command topic ${r.topic} is held by ${r.ownerDevice} (${r.owner}), which is away; if that device is really gone, \`hearth devices forget ${r.ownerDevice}\` frees it`;
  if (r.owner) return `its command topic ${r.topic} belongs to ${r.owner}`;
  return `its command topic ${r.topic} is ${r.reason}, which Hearth never publishes on`;
}
