// Every device the bridge knows, from every source. Device files win over
// discovery: a device declared in devices/ replaces a discovered one with the
// same id. Every command topic has one owner, and every state topic one
// reader (topic-owners.ts): an entity that claims a topic another device owns
// or reads is left out, with one log line naming both. Entities rank device
// files first, then discovered ones in the order first seen (remembered
// across restarts when the assembly gives a store).
// Listeners hear about each change once, with the whole new set.
import { EventEmitter } from 'node:events';
import type { Logger } from '../log.js';
import { firstFew, LineBudget } from '../util/line-budget.js';
import { commandTopicsOf } from './commands.js';
import type { SourceTopics } from './discovery/index.js';
import { type EntityMemory, type HeldForm, heldFormOf, MemoryEntityNames, UNREADABLE_HELD_FORM, withHeldForm } from './entity-names.js';
import { HomeModel } from './home/home-model.js';
import { saidAs } from './home/place-names.js';
import { type Device, deviceWith, type Entity, entityWith, stateTopicsOf } from './model.js';
import {
  assignStateTopicReaders,
  assignTopicOwners,
  deviceOfEntityId,
  dollarTopics,
  moversOf,
  orderWithHolders,
  readTopicsOf,
  type ReservedTopics,
  type TopicClaim,
  type TopicRefusal,
} from './topic-owners.js';

export interface RegistryEvents {
  /**
   * The next set of devices, worked out and about to be swapped in (the same array `changed` then announces),
   * in a turn of its own when the rebuild is in turns: a listener may build what it will need from it (the
   * state cache's routes) there, instead of in the turn of the swap. Nothing of it is in force yet.
   */
  preparing: [devices: Device[]];
  changed: [devices: Device[]];
}

/** The source name of device files (src/bridge.ts): they outrank every discovered source. */
export const FILE_SOURCE = 'files';

export interface RegistryOptions {
  log?: Logger;
  /** First-seen order of discovered entities; in memory when not given. */
  memory?: EntityMemory;
  /** The sources' control topics (discovery prefixes, bridge topics): never commanded. `$` topics always are. */
  reserved?: ReservedTopics;
  /** The topics the discovery sources read themselves (discovery configs, Zigbee2MQTT's list): no entity's state nor availability. */
  sourceTopics?: SourceTopics;
  /** Areas, floors and people's choices laid over the sources (SQLite in the assembly); in memory when not given. */
  home?: HomeModel;
  /** The stored keys of discovered entities (entity-keys.ts): forgotten with what the memory forgets. */
  entityKeys?: ForgetsEntityKeys;
}

/** What forgetting a device asks of the entity keys' store (EntityKeys). */
export interface ForgetsEntityKeys {
  forgetDevice(deviceId: string): void;
  forgetEntities(entityIds: readonly string[]): void;
}

export class DeviceRegistry extends EventEmitter<RegistryEvents> {
  /** source name -> (priority, devices by id); a lower priority number wins. */
  private sources = new Map<string, { priority: number; devices: Map<string, Device> }>();
  private merged: Device[] = [];
  private rankedEntities: Entity[] = [];
  private entityIndex = new Map<string, Entity>();
  private deviceIndex = new Map<string, Device>();
  private refusals = new Map<string, TopicRefusal>();
  private readTopics = new Map<string, string>();
  private commandTopics = new Set<string>();
  private readonly reserved: ReservedTopics;
  private readonly sourceTopics: SourceTopics;
  private readonly log?: Logger;
  readonly memory: EntityMemory;
  readonly home: HomeModel;
  private readonly entityKeys?: ForgetsEntityKeys;
  private exposedRanked: Entity[] = [];
  private exposedList: Entity[] = [];
  /** The exposed entities of some kinds, in exposedEntities() order, per kind list asked: emptied by every rebuild. */
  private exposedKinds = new Map<string, Entity[]>();
  /** Bumped by every rebuild: a rebuild in turns stops when another has started since. */
  private version = 0;
  /** The set last swapped in, its command and state topics not written to the memory yet (setSourceInTurns). */
  private rememberLater?: Plan;
  /** The refusal lines, bounded per rebuild and per second (report). */
  private readonly refusalLines = new LineBudget();

  constructor(options: RegistryOptions = {}) {
    super();
    this.log = options.log;
    const configured = options.reserved;
    this.reserved = configured ? (t) => dollarTopics(t) ?? configured(t) : dollarTopics;
    this.sourceTopics = options.sourceTopics ?? (() => undefined);
    this.memory = options.memory ?? new MemoryEntityNames();
    this.home = options.home ?? new HomeModel();
    this.entityKeys = options.entityKeys;
    // One rebuild (and one 'changed') per change a person makes, or per batch of them (an imported file).
    this.home.on('change', () => {
      if (!this.home.batching) this.rebuild();
    });
    this.home.on('settled', () => this.rebuild());
  }

  /** Replace everything one source knows. */
  setSource(name: string, priority: number, devices: Device[]): void {
    this.sources.set(name, { priority, devices: new Map(devices.map((d) => [d.id, d])) });
    this.rebuild();
  }

  /**
   * The same for a big list (a Zigbee2MQTT bridge/devices of thousands of devices), the work spread over a few
   * turns of the event loop so that calls, echoes and messages go on in between: the new set is worked out
   * (places, ranks, topic owners, names, indexes) while the registry still answers with the old one, then
   * swapped in and announced in one step, so nothing ever sees half of each. A change made meanwhile (another
   * source, a person's choice) rebuilds at once with this list in it, and this one stops; so does it when
   * `current` says a newer list of the source is on its way (then that one is what comes in). Resolves true
   * when this rebuild swapped the list in, false when it stopped.
   */
  setSourceInTurns(name: string, priority: number, devices: Device[], current: () => boolean = () => true): Promise<boolean> {
    this.sources.set(name, { priority, devices: new Map(devices.map((d) => [d.id, d])) });
    const version = ++this.version;
    const plan: Plan = {};
    let stage = 0;
    return new Promise((resolve, reject) => {
      const next = () => {
        if (version !== this.version || !current()) return resolve(false);
        try {
          this.stages[stage++]!(plan);
        } catch (err) {
          return reject(err);
        }
        if (stage < this.stages.length) return setImmediate(next);
        // What outlives the run is written in a turn of its own, unless a newer rebuild writes first.
        this.rememberLater = plan;
        setImmediate(() => this.rememberNow());
        resolve(true);
      };
      setImmediate(next);
    });
  }

  /** Add, replace or (with `undefined`) remove one device of a source. */
  upsert(name: string, priority: number, id: string, device: Device | undefined): void {
    let src = this.sources.get(name);
    if (!src) this.sources.set(name, (src = { priority, devices: new Map() }));
    if (device) src.devices.set(id, device);
    else if (!src.devices.delete(id)) return;
    this.rebuild();
  }

  /** A rebuild, in order; setSourceInTurns gives each a turn of the event loop (each is ~10-30 ms for 10,000 entities). */
  private readonly stages: ReadonlyArray<(plan: Plan) => void> = [
    (plan) => this.place(plan),
    (plan) => this.rank(plan),
    (plan) => this.own(plan),
    (plan) => this.name(plan),
    (plan) => this.emit('preparing', plan.merged!),
    (plan) => this.commit(plan),
  ];

  private rebuild(): void {
    // A rebuild in turns still under way stops: this one has its list.
    this.version++;
    const plan: Plan = {};
    for (const stage of this.stages) stage(plan);
    this.rememberLater = plan;
    this.rememberNow();
  }

  /** Each source's winning devices, placed and named by the home model. */
  private place(plan: Plan): void {
    const byId = new Map<string, { priority: number; device: Device; source: string }>();
    for (const [source, { priority, devices }] of this.sources) {
      for (const device of devices.values()) {
        const held = byId.get(device.id);
        if (!held || priority < held.priority) byId.set(device.id, { priority, device, source });
      }
    }
    // The home model places and names each device (a person's choice, else the source's).
    const chosen = [...byId.values()];
    const placed = this.home.apply(chosen.map(({ device, source }) => ({ device, source })));
    plan.devices = placed;
    plan.claims = chosen.flatMap(({ source }, i) => placed[i]!.entities.map((entity) => ({ entity, source })));
  }

  /** The entities ranked (device files first, then discovered ones as first seen); the topics Hearth reads. */
  private rank(plan: Plan): void {
    const claims = plan.claims!;
    const files = claims.filter((c) => c.source === FILE_SOURCE).sort(byEntityId);
    const found = claims.filter((c) => c.source !== FILE_SOURCE).sort(byEntityId);
    // Newcomers in one batch are recorded in id order: the only order there is.
    const seen = this.memory.firstSeen(found.map((c) => c.entity.id));
    this.memory.seen?.(claims.map((c) => c.entity.id));
    found.sort((a, b) => seen.get(a.entity.id)! - seen.get(b.entity.id)! || byEntityId(a, b));
    plan.files = files;
    plan.found = found;
    plan.readTopics = readTopicsOf(plan.devices!);
  }

  /**
   * Who owns each command topic and who is refused (a refused entity's device goes on without it). An entity the
   * memory holds topics for keeps them while it is away: a newcomer claiming one is refused (topic-owners.ts).
   */
  private own(plan: Plan): void {
    const readTopics = plan.readTopics!;
    const remembered = this.memory.rememberedCommandTopics?.() ?? new Map<string, readonly string[]>();
    const movers = moversOf(plan.found!, remembered);
    if (movers.size) this.keepMovedDevices(plan, new Set(movers.keys()));
    const claims = orderWithHolders(plan.files!, plan.found!, remembered, (ids) => this.memory.firstSeen(ids), movers);
    // No one commands a topic an away device read (its state topic stays its own while it is away, below): a switch
    // aimed there would make Hearth write on the lock's state topic, which others read too.
    const rememberedState = this.memory.rememberedStateTopics?.() ?? new Map<string, readonly string[]>();
    const present = new Set(plan.claims!.map((c) => c.entity.id));
    const awayRead = new Map<string, string>();
    for (const [id, topics] of rememberedState) if (!present.has(id)) for (const t of topics) if (!awayRead.has(t)) awayRead.set(t, id);
    const forbidden = (topic: string) =>
      readTopics.get(topic) ?? (awayRead.has(topic) ? `the state topic of ${awayRead.get(topic)}, which is away` : undefined) ?? this.reserved(topic);
    const { owners, refused } = assignTopicOwners(claims, forbidden);
    // A state topic is read by one device: an entity reading another's is out whole, its command topics too. What
    // an entity read stays its device's while it is away or moving (remembered, as its command topics are).
    const misread = assignStateTopicReaders(
      plan.files!,
      plan.found!.filter((c) => !movers.has(c.entity.id) && !refused.has(c.entity.id)),
      new Set(plan.devices!.filter((d) => d.unnamed).map((d) => d.id)),
      rememberedState,
      new Set(movers.keys()),
      this.sourceTopics,
    );
    for (const [id, r] of misread) refused.set(id, r);
    // A mover keeps what it holds (claimed for it above) and gets none of its new topics until a person confirms.
    for (const [id, { claim, held }] of movers) {
      const to = commandTopicsOf(claim.entity).filter((t) => !held.includes(t));
      refused.set(id, { kind: 'moved', topic: to[0]!, movedFrom: held, refused: claim.entity });
    }
    plan.commandTopics = new Set([...owners].filter(([, e]) => !misread.has(e.id)).map(([topic]) => topic));
    plan.refused = refused;
    plan.merged = plan
      .devices!.map((device) => {
        if (!device.entities.some((e) => refused.has(e.id))) return device;
        // A firmware update whose install topic is refused is still worth reading ("are there updates?"). Copies
        // here and below by deviceWith/entityWith: each laid out alike (model.ts; issue 45).
        const entities = device.entities.flatMap((e) =>
          !refused.has(e.id) ? [e] : e.kind === 'update' && !refused.get(e.id)!.read ? [withoutCommands(e)] : [],
        );
        return entities.length ? deviceWith(device, { entities }) : undefined;
      })
      .filter((d): d is Device => !!d)
      .sort((a, b) => a.id.localeCompare(b.id));
  }

  /**
   * A device whose move waits for a person waits whole: its entities that follow the move (sensors: no command
   * topic of their own to hold) keep what the move would change as the registry has it now (name, state topic, and
   * so tool name and phrase) until the move is confirmed; a person's area, aliases and exposure still apply. Else a
   * forged list renaming the lock would rename its sensors and free their names and state topic for a newcomer named
   * like the lock. What they keep is remembered (EntityMemory.rememberHeldForms), so after a restart while the move
   * waits they keep it too (and their tool names: tool-set.ts), until the move is confirmed or the device is back.
   */
  private keepMovedDevices(plan: Plan, movers: ReadonlySet<string>): void {
    const sourceOf = new Map(plan.claims!.map((c) => [c.entity.id, c.source]));
    const moving = new Set([...movers].map((id) => `${sourceOf.get(id)}\u0000${deviceOfEntityId(id)}`));
    const kept = new Map<string, Entity>();
    const withheld = new Set<string>();
    plan.devices = plan.devices!.map((device) => {
      const source = device.entities.length ? sourceOf.get(device.entities[0]!.id) : undefined;
      if (!moving.has(`${source}\u0000${device.id}`)) return device;
      let changed = false;
      const entities = device.entities.flatMap((e) => {
        if (movers.has(e.id)) return [e];
        const before = this.entityIndex.get(e.id);
        let held: Entity;
        if (before && before.deviceId === device.id) {
          if (before === e) return [e];
          // What the source's move would change stays (the name a tool and a phrase are made from, the topics read);
          // what a person chose since (area, aliases, exposure) is theirs to change while the move waits.
          held = entityWith(e, {
            name: before.name,
            toolBase: before.toolBase,
            stateTopic: before.stateTopic,
            valuePath: before.valuePath,
            transform: before.transform,
            attributes: before.attributes,
          });
        } else {
          // Not seen in this run (a restart while the move waits): as it was remembered before the move.
          const form = this.memory.heldForm?.(e.id);
          if (!form) return [e];
          // Kept but unreadable (entity-names.ts): withheld until the move is confirmed, never let follow the source.
          if (form === UNREADABLE_HELD_FORM) {
            changed = true;
            withheld.add(e.id);
            return [];
          }
          held = withHeldForm(e, form);
        }
        changed = true;
        kept.set(e.id, held);
        return [held];
      });
      return changed ? deviceWith(device, { entities }) : device;
    });
    plan.held = kept;
    // Withheld (a held form the database has but cannot read): out of the claims too, so it claims nothing of the
    // source's and nothing of it is remembered as following the move.
    if (withheld.size) {
      const keep = (c: TopicClaim) => !withheld.has(c.entity.id);
      plan.claims = plan.claims!.filter(keep);
      plan.files = plan.files!.filter(keep);
      plan.found = plan.found!.filter(keep);
      plan.readTopics = readTopicsOf(plan.devices);
    }
    if (!kept.size) return;
    const swap = (c: TopicClaim) => {
      const before = kept.get(c.entity.id);
      return before ? { ...c, entity: before } : c;
    };
    plan.claims = plan.claims!.map(swap);
    plan.files = plan.files!.map(swap);
    plan.found = plan.found!.map(swap);
    plan.readTopics = readTopicsOf(plan.devices);
  }

  /** The names told apart, and the indexes: nothing swapped in yet. */
  private name(plan: Plan): void {
    let merged = plan.merged!;
    const entityIndex = new Map<string, Entity>();
    for (const d of merged) for (const e of d.entities) entityIndex.set(e.id, e);
    let ranked: Entity[] = [];
    for (const c of [...plan.files!, ...plan.found!]) {
      const e = entityIndex.get(c.entity.id);
      if (e) ranked.push(e);
    }
    const renamed = distinctNames(ranked, new Set(plan.files!.map((c) => c.entity.id)));
    if (renamed.size) {
      merged = merged.map((d) => (d.entities.some((e) => renamed.has(e.id)) ? deviceWith(d, { entities: d.entities.map((e) => renamed.get(e.id) ?? e) }) : d));
      ranked = ranked.map((e) => renamed.get(e.id) ?? e);
      for (const e of renamed.values()) entityIndex.set(e.id, e);
    }
    plan.merged = merged;
    plan.ranked = ranked;
    plan.entityIndex = entityIndex;
    plan.exposedList = merged.flatMap((d) => d.entities.filter((e) => e.exposed !== false));
    plan.deviceIndex = new Map(merged.map((d) => [d.id, d]));
  }

  /** Swap the new set in, in one step, and announce it. */
  private commit(plan: Plan): void {
    this.readTopics = plan.readTopics!;
    this.commandTopics = plan.commandTopics!;
    this.report(plan.refused!);
    this.merged = plan.merged!;
    this.rankedEntities = plan.ranked!;
    this.exposedRanked = this.rankedEntities.filter((e) => e.exposed !== false);
    this.exposedList = plan.exposedList!;
    this.exposedKinds = new Map();
    this.deviceIndex = plan.deviceIndex!;
    this.entityIndex = plan.entityIndex!;
    this.emit('changed', this.merged);
  }

  /**
   * The command and state topics of the set last swapped in, to the memory (once: a newer rebuild replaces what is
   * not written yet). Discovered entities' topics outlive this run: after a restart the broker gates their command
   * topics, and a newcomer reading their state topics is refused, before they re-announce.
   */
  private rememberNow(): void {
    const plan = this.rememberLater;
    this.rememberLater = undefined;
    if (!plan) return;
    this.rememberHeld(plan);
    const admitted = plan.found!.filter((c) => !plan.refused!.has(c.entity.id));
    this.memory.rememberCommandTopics?.(new Map(admitted.map((c) => [c.entity.id, commandTopicsOf(c.entity)])));
    // A config naming no device never holds a topic against a named one (assignStateTopicReaders): nothing to keep.
    const unnamed = new Set(plan.devices!.filter((d) => d.unnamed).map((d) => d.id));
    this.memory.rememberStateTopics?.(new Map(admitted.map((c) => [c.entity.id, unnamed.has(c.entity.deviceId) ? [] : stateTopicsOf(c.entity)])));
  }

  /**
   * What the entities of a device whose move waits keep, remembered (keepMovedDevices); let go for a device in the
   * home whose move no longer waits (confirmed, or its source put it back). A device absent from this set (its
   * source not heard yet after a restart) keeps what it kept.
   */
  private rememberHeld(plan: Plan): void {
    if (!this.memory.rememberHeldForms) return;
    const forms = new Map<string, HeldForm | undefined>();
    const moving = new Set([...plan.refused!.values()].filter((r) => r.movedFrom).map((r) => r.refused.deviceId));
    const present = new Set(plan.devices!.map((d) => d.id));
    for (const id of this.memory.heldEntities?.() ?? []) {
      const device = deviceOfEntityId(id);
      if (present.has(device) && !moving.has(device)) forms.set(id, undefined);
    }
    for (const [id, e] of plan.held ?? []) forms.set(id, heldFormOf(e));
    if (forms.size) this.memory.rememberHeldForms(forms);
  }

  /**
   * A line per refused claim when it is first refused (not on every rebuild), bounded (util/line-budget.ts): a
   * rebuild's first few get a line each (moves first), the rest one summary line with the count and the first few
   * devices, and a storm of lists at most LINE_BUDGET's burst, then one line a second. Every refusal stays in
   * refusedClaims() (the page, /api/devices/refused, `hearth devices`) whether it was logged or not.
   */
  private report(refused: Map<string, TopicRefusal>): void {
    const key = (r: TopicRefusal) => `${r.refused.id}\u0000${r.topic}\u0000${r.owner?.id ?? r.awayOwner ?? r.reason}`;
    const before = new Set([...this.refusals.values()].map(key));
    this.refusals = refused;
    const fresh = [...refused.values()].filter((r) => !before.has(key(r)));
    // Moves first: what an owner has to confirm.
    fresh.sort((a, b) => Number(!a.movedFrom) - Number(!b.movedFrom));
    this.refusalLines.batch(
      fresh,
      (r) => this.reportOne(r),
      ({ rest, unlogged }) => {
        const moved = rest.filter((r) => r.movedFrom);
        const others = rest.filter((r) => !r.movedFrom);
        const devicesOf = (list: readonly TopicRefusal[]) => [...new Set(list.map((r) => r.refused.deviceId))];
        const devices = devicesOf(rest);
        const parts = [
          ...(moved.length
            ? [
                `${moved.length} moved by their source, each device waiting for an owner's \`hearth devices confirm-move <device>\` (${firstFew(devicesOf(moved))})`,
              ]
            : []),
          ...(others.length ? [`${others.length} refused a command or state topic they may not have (${firstFew(devicesOf(others))})`] : []),
        ];
        this.log?.warn(
          { refusedCount: rest.length, movedCount: moved.length, devices: devices.slice(0, 5), deviceCount: devices.length, ...(unlogged ? { unlogged } : {}) },
          `${rest.length} more entities of ${devices.length} devices are left out: ${parts.join('; ')}${unlogged ? `; and ${unlogged} before them were not logged (too many at once)` : ''}. \`hearth devices\` and the page list every one with why`,
        );
      },
    );
  }

  private reportOne(r: TopicRefusal): void {
    const who = `${r.refused.id} (${JSON.stringify(r.refused.name)}, ${r.refused.kind})`;
    if (r.movedFrom)
      this.log?.warn(
        { topic: r.topic, movedFrom: r.movedFrom, refused: r.refused.id, device: r.refused.deviceId },
        `${who} is moved by its source to command topic ${r.topic}${r.movedFrom.length ? ` from ${r.movedFrom.join(', ')}` : ''} (a rename in Zigbee2MQTT, or a forged message: on the broker they look the same); it keeps ${r.movedFrom.length ? 'its old topic' : 'no topic'} and gets no command until an owner confirms the move: \`hearth devices confirm-move ${r.refused.deviceId}\``,
      );
    else if (r.kind === 'source')
      this.log?.warn(
        { topic: r.topic, reason: r.reason, read: true, ...(r.availability ? { availability: true } : {}), refused: r.refused.id },
        `${r.availability ? 'availability' : 'state'} topic ${r.topic} is ${r.reason}: what comes there is that source's, never an entity's ${r.availability ? 'availability' : 'state'} (and a reading of it read again would replay it to the source); ${who} is refused and gets no tool`,
      );
    else if (r.read && r.owner)
      this.log?.warn(
        { topic: r.topic, owner: r.owner.id, read: true, refused: r.refused.id },
        `state topic ${r.topic} is read by ${r.owner.id} (${JSON.stringify(r.owner.name)}) of device ${r.owner.deviceId}: its readings are that device's; ${who} is refused and gets no tool`,
      );
    else if (r.read && r.awayOwner)
      this.log?.warn(
        { topic: r.topic, owner: r.awayOwner, read: true, ...(r.ownerMoving ? { moving: true } : { away: true }), refused: r.refused.id },
        r.ownerMoving
          ? `state topic ${r.topic} is read by ${r.awayOwner}, which its source moved elsewhere (an owner has not confirmed the move): its readings are that device's; ${who} is refused and gets no tool`
          : `state topic ${r.topic} is read by ${deviceOfEntityId(r.awayOwner)} (${r.awayOwner}), which is away (remembered, not in the home now): its readings are that device's; ${who} is refused and gets no tool. If that device is really gone, \`hearth devices forget ${deviceOfEntityId(r.awayOwner)}\` frees its topics`,
      );
    else if (r.awayOwner && r.ownerMoving)
      this.log?.warn(
        { topic: r.topic, owner: r.awayOwner, moving: true, refused: r.refused.id },
        `command topic ${r.topic} is held by ${r.awayOwner}, which its source moved elsewhere (an owner has not confirmed the move); ${who} is refused and gets no tool`,
      );
    else if (r.awayOwner)
      this.log?.warn(
        { topic: r.topic, owner: r.awayOwner, away: true, ...(r.ownerTopic ? { ownerTopic: r.ownerTopic } : {}), refused: r.refused.id },
        `command topic ${r.topic} is held by ${deviceOfEntityId(r.awayOwner)} (${r.awayOwner}), which is away (remembered, not in the home now)${r.ownerTopic ? ` and commanded on ${r.ownerTopic}` : ''}; ${who} is refused and gets no tool. If that device is really gone, \`hearth devices forget ${deviceOfEntityId(r.awayOwner)}\` frees its topics`,
      );
    else if (r.owner)
      this.log?.warn(
        { topic: r.topic, owner: r.owner.id, ...(r.ownerTopic ? { ownerTopic: r.ownerTopic } : {}), refused: r.refused.id },
        r.ownerTopic
          ? `command topic ${r.topic} is ${r.ownerTopic.startsWith(`${r.topic}/`) ? 'above' : 'under'} ${r.ownerTopic}, the command topic of ${r.owner.id} (${JSON.stringify(r.owner.name)}): a command there reaches that device; ${who} is refused and gets no tool`
          : `command topic ${r.topic} is already owned by ${r.owner.id} (${JSON.stringify(r.owner.name)}); ${who} is refused and gets no tool`,
      );
    else
      this.log?.warn(
        { topic: r.topic, reason: r.reason, refused: r.refused.id },
        `command topic ${r.topic} is ${r.reason}, which Hearth never publishes on; ${who} is refused and ${r.refused.kind === 'update' ? 'is only read (no install)' : 'gets no tool'}`,
      );
  }

  devices(): Device[] {
    return this.merged;
  }

  entities(): Entity[] {
    return [...this.entityIndex.values()];
  }

  /** The entities in rank order: device files first (by id), then discovered ones in the order first seen. */
  ranked(): Entity[] {
    return this.rankedEntities;
  }

  /** The ranked entities agents are shown (Entity.exposed): what tools, MCP, chat and voice are built from. */
  exposed(): Entity[] {
    return this.exposedRanked;
  }

  /** The entities agents are shown, in the order of entities(). */
  exposedEntities(): Entity[] {
    return this.exposedList;
  }

  /**
   * The entities agents are shown of these kinds, in the order of entities(): what a grouped call chooses among.
   * Computed once per change of the home (a list per set of kinds asked), never per call: a grouped call scanned
   * every entity of the home for its kinds.
   */
  exposedOfKinds(kinds: readonly string[]): Entity[] {
    const key = kinds.join('\u0000');
    let list = this.exposedKinds.get(key);
    if (!list) this.exposedKinds.set(key, (list = this.exposedList.filter((e) => kinds.includes(e.kind))));
    return list;
  }

  device(id: string): Device | undefined {
    return this.deviceIndex.get(id);
  }

  entity(id: string): Entity | undefined {
    return this.entityIndex.get(id);
  }

  /** Whether this entity, as the registry has it now, takes commands on this topic. */
  commandsOn(entityId: string, topic: string): boolean {
    const entity = this.entityIndex.get(entityId);
    return !!entity && commandTopicsOf(entity).includes(topic);
  }

  /**
   * Why no entity may be commanded on this topic (Hearth reads it, or it is a source's control topic), or
   * undefined. Checked when entities are admitted and again by the command gate before anything is sent.
   */
  commandRefusal(topic: string): string | undefined {
    return this.readTopics.get(topic) ?? this.reserved(topic);
  }

  /**
   * Whether an entity Hearth knows, or remembers from an earlier run, is commanded on this topic or on a topic
   * above it (a device that takes commands on `<cmd>` takes them on `<cmd>/state` too: Zigbee2MQTT does). The
   * embedded broker lets only Hearth publish there. A topic Hearth reads stays a device's to report on.
   */
  isCommandTopic(topic: string): boolean {
    const commanded = (t: string) => this.commandTopics.has(t) || !!this.memory.remembersCommandTopic?.(t);
    if (commanded(topic)) return true;
    if (this.readTopics.has(topic)) return false;
    for (let i = topic.lastIndexOf('/'); i > 0; i = topic.lastIndexOf('/', i - 1)) if (commanded(topic.slice(0, i))) return true;
    return false;
  }

  /** The devices whose move waits for a person (an entity of theirs is refused with TopicRefusal.movedFrom). */
  movingDevices(): Set<string> {
    return new Set([...this.refusals.values()].filter((r) => r.movedFrom).map((r) => r.refused.deviceId));
  }

  /**
   * Entities refused for claiming a command topic another device owns (present or away) or one no entity may command,
   * for reading another device's state topic (`read`), or held back while their device's move waits (`movedFrom`).
   */
  refusedClaims(): TopicRefusal[] {
    return [...this.refusals.values()];
  }

  /**
   * A person confirms that a device moved (renamed in Zigbee2MQTT, its discovery config changed): each of its
   * entities waiting on a move (a refused mover, TopicRefusal.movedFrom) now holds the topics its source gives it,
   * and lets go of the old ones. `to`: the topic the person was shown; nothing moves when the device is not going
   * there now (a forged message may have moved it again meanwhile). Returns what moved, and where the movers are
   * going now (none: no move of this device waits).
   */
  confirmMove(deviceId: string, to?: string): { moved: Array<{ entity: string; from: readonly string[]; to: readonly string[] }>; going: string[] } {
    const movers = [...this.refusals.values()].filter((r) => r.movedFrom && r.refused.deviceId === deviceId);
    const going = [...new Set(movers.flatMap((r) => commandTopicsOf(r.refused)))].sort();
    if (!movers.length || (to !== undefined && !going.includes(to)) || !this.memory.rememberCommandTopics) return { moved: [], going };
    const moved = movers.map((r) => ({ entity: r.refused.id, from: r.movedFrom!, to: commandTopicsOf(r.refused) }));
    this.memory.rememberCommandTopics(new Map(moved.map((m) => [m.entity, m.to])));
    this.rebuild();
    return { moved, going };
  }

  /**
   * A person says a device is gone for good (Home Assistant's "delete device"): what Hearth remembers of its
   * entities (first-seen rank, tool names, command and state topics, held forms, entity keys) is forgotten, so a
   * newcomer may take its topics and names, and the device announced again gets entity keys as a new device would.
   * Only a device no source has now: one still announced would come back at once as a newcomer, behind the
   * claimants it had outranked. Returns the entity ids forgotten (none: Hearth remembers no such device).
   */
  forgetDevice(deviceId: string): { forgotten: string[]; present: boolean } {
    const present = [...this.sources.values()].some((s) => s.devices.has(deviceId)) || this.deviceIndex.has(deviceId);
    // Present: only the entities its source no longer has (gone from its exposes after a firmware or converter
    // update) may be forgotten; they are not away, and would otherwise hold their topics until remember_days.
    const forgotten = present ? this.forgetVanished(deviceId) : (this.memory.forgetDevice?.(deviceId) ?? []);
    if (forgotten.length) {
      if (present) this.entityKeys?.forgetEntities(forgotten);
      else this.entityKeys?.forgetDevice(deviceId);
      this.rebuild();
    }
    return { forgotten, present };
  }

  /** What Hearth remembers of a present device's entities that no source has now: forgotten. */
  private forgetVanished(deviceId: string): string[] {
    const has = new Set<string>();
    for (const s of this.sources.values()) for (const e of s.devices.get(deviceId)?.entities ?? []) has.add(e.id);
    for (const e of this.deviceIndex.get(deviceId)?.entities ?? []) has.add(e.id);
    const vanished = [...(this.memory.rememberedEntities?.() ?? [])].filter((id) => deviceOfEntityId(id) === deviceId && !has.has(id));
    return vanished.length ? (this.memory.forgetEntities?.(vanished) ?? []) : [];
  }
}

/** A rebuild's work, filled in stage by stage before it is swapped in. */
interface Plan {
  devices?: Device[];
  claims?: TopicClaim[];
  files?: TopicClaim[];
  found?: TopicClaim[];
  readTopics?: Map<string, string>;
  commandTopics?: Set<string>;
  refused?: Map<string, TopicRefusal>;
  /** The entities of moving devices that keep what they had (keepMovedDevices), as kept. */
  held?: Map<string, Entity>;
  merged?: Device[];
  entityIndex?: Map<string, Entity>;
  deviceIndex?: Map<string, Device>;
  exposedList?: Entity[];
  ranked?: Entity[];
}

const byEntityId = (a: TopicClaim, b: TopicClaim) => (a.entity.id < b.entity.id ? -1 : a.entity.id > b.entity.id ? 1 : 0);

/**
 * Two entities with one name cannot be told apart (by voice, in a list, by a model): the one ranked first
 * keeps the name, a later one gets its area added ("Kitchen light (Hallway)") when that tells it apart, else a
 * number ("Kitchen light 2"). Ranks are kept across restarts, so the names are stable. Names compare as they
 * are said (case, accents, punctuation and a leading article aside: "The movie-time!" is "Movie time"), and a
 * discovered entity's alias that is already an earlier entity's name or alias is dropped, so that a later
 * device never takes (nor makes ambiguous) what people say of an earlier one. A device file's aliases are the
 * owner's and stay. `ranked` is in rank order; returns the entities it renamed, by id.
 */
function distinctNames(ranked: readonly Entity[], fromFiles: ReadonlySet<string>): Map<string, Entity> {
  const owner = new Map<string, string>();
  const renamed = new Map<string, Entity>();
  for (const e of ranked) {
    let name = e.name;
    const held = owner.get(saidKey(name));
    if (held !== undefined && held !== e.id) {
      name = e.area ? `${e.name} (${e.area})` : '';
      for (let n = 2; !name || owner.has(saidKey(name)); n++) name = `${e.name} ${n}`;
    }
    owner.set(saidKey(name), e.id);
    const aliases = e.aliases.filter((a) => {
      const k = saidKey(a);
      const other = owner.get(k);
      if (other !== undefined && other !== e.id && !fromFiles.has(e.id)) return false;
      if (other === undefined) owner.set(k, e.id);
      return true;
    });
    if (name !== e.name || aliases.length !== e.aliases.length) renamed.set(e.id, entityWith(e, { name, aliases }));
  }
  return renamed;
}

/** A name as it is said: no case, accents, punctuation or leading article, one space between words. */
function saidKey(name: string): string {
  return saidAs(name).replace(/^(?:the|a|an|my|our) (?=\S)/, '');
}

/** An entity with its commands taken away: read, never commanded. */
function withoutCommands(entity: Entity): Entity {
  return entityWith(entity, { commandTopic: undefined, commandTopics: {}, commandTemplates: undefined, payloads: {} });
}
