// Stable device ids, as Home Assistant's entity registry keeps them (issue 41). A discovered device's id is made
// once, from its name (`Living room/Ceiling light` -> `living_room_ceiling_light`), when its identity at its source
// is first seen (a Zigbee2MQTT IEEE address or group, a Home Assistant discovery device's identifier); it is unique
// across every device Hearth knows (`_2`, `_3` on a clash) and kept in SQLite (migration 0021), so a rename, a
// restart or a forged device list never moves it. Policy rules, approvals, history, remembered command topics and
// the home's choices are keyed by it: an id that followed names would let a rename walk a lock out from under a
// deny rule.
//
// An installation upgraded from the ids made from radio addresses (`zigbee2mqtt_0x000b57fffe9a8b7c`) keeps them
// wherever its database still refers to them (see legacyIdsInUse). Device-controlled input creates rows here, so
// they are capped: past the cap a newcomer gets the id made from its radio identity, unstored (see idFor).
// Adapters stay plain converters: they are handed `lookup(source)`, and call commit() once per batch, before
// the registry hears of the devices, so that only new identities are ever written, in one transaction. How ids are
// held and written is the id store's (id-store.ts); what an id is made of is this file's.
import type { Db } from '../db/database.js';
import type { Logger } from '../log.js';
import { compileGlob, isWildcard, type Matcher } from '../policy/glob.js';
import { shortHash, slug } from '../util/slug.js';
import { PerKeyThrottle } from '../util/per-key-throttle.js';
import { EntityKeys } from './entity-keys.js';
import { IdStore } from './id-store.js';

/** Most identities given an id (a home has hundreds; a forged list of 100,000 addresses must not grow the file). */
export const MAX_DEVICE_IDS = 10_000;
/** Device ids follow the device-file rule. */
const DEVICE_ID_RE = /^[a-z0-9][a-z0-9_-]{0,63}$/;

export interface DeviceIdRequest {
  /** The device's identity at its source: an IEEE address, `group:7`, a discovery device's first identifier. */
  identity: string;
  /** The name the id is made from, as the source gives it (the whole friendly name). */
  name: string;
  /** The id Hearth made for this identity before ids came from names: kept where the database still refers to it. */
  legacy: string;
}

/** What an adapter is handed: the id of a device of its source, or undefined when none can be given. */
export type DeviceIdLookup = (request: DeviceIdRequest) => string | undefined;

/** The ids an older Hearth made that the database still refers to, and the entity rules written against them. */
export interface LegacyIds {
  ids: ReadonlySet<string>;
  /** Entity-rule patterns whose device part names devices literally (`zigbee2mqtt_0x000b57fffe9a8b7c`, `zigbee2mqtt_*`). */
  patterns: readonly Matcher[];
  /** The whole entity ids the database refers to (`dehumidifier.8caab5c1d2e3_rl_1`): their keys stay (entity-keys.ts). */
  entities: ReadonlySet<string>;
  /** Entity-rule patterns with a wildcard (`dehumidifier.8caab5*`), whole. */
  entityPatterns: readonly Matcher[];
}

export interface DeviceIdOptions {
  log?: Logger;
  /** Most identities kept (MAX_DEVICE_IDS). */
  max?: number;
  /** The legacy ids in use; read from the database on first need when not given. */
  legacy?: LegacyIds;
}

/** A device id (`[a-z0-9_-]`, at most 64) made from a name, or undefined when the name has no letters or digits to make one. */
export function deviceIdFromName(name: string): string | undefined {
  // `Master Bedroom - Ceiling` is `master_bedroom_ceiling`, not `master_bedroom_-_ceiling`.
  let id = slug(name).replace(/[_-]{2,}/g, '_');
  if (!id) return undefined;
  if (id.length > 64) id = `${id.slice(0, 57).replace(/[_-]+$/, '')}_${shortHash(name)}`;
  return DEVICE_ID_RE.test(id) ? id : undefined;
}

function withNumber(base: string, n: number): string {
  const suffix = `_${n}`;
  return `${base.slice(0, 64 - suffix.length).replace(/[_-]+$/, '')}${suffix}`;
}

/** The device part of an entity id (`lamp.light`, `lamp.light#reading`). */
function devicePart(entityId: string): string {
  return entityId.split(/[.#]/, 1)[0]!;
}

/**
 * The ids an older Hearth made that this database refers to: remembered entities (their tool names and command
 * topics), history, approvals, the audit, and the home's choices for sources without an identity of their own;
 * and the entity rules whose device part is written out (`zigbee2mqtt_0x000b57fffe9a8b7c.*`, `zigbee2mqtt_*`),
 * which would silently stop applying to a device whose id changed. Read once, at the first new identity.
 */
export function legacyIdsInUse(db: Db): LegacyIds {
  const ids = new Set<string>();
  const entities = new Set<string>();
  const add = (rows: unknown[]) => {
    for (const r of rows as Array<{ id: string | null }>)
      if (r.id) {
        ids.add(devicePart(r.id));
        entities.add(r.id.split('#', 1)[0]!);
      }
  };
  add(db.prepare('SELECT entity_id AS id FROM entity_names').all());
  add(db.prepare('SELECT entity_id AS id FROM history_series').all());
  add(db.prepare("SELECT DISTINCT entity_id AS id FROM approvals WHERE entity_id IS NOT NULL AND status IN ('pending', 'granted')").all());
  // Each distinct entity of the audit once, by its index (the audit may hold millions of calls).
  add(
    db
      .prepare(
        `WITH RECURSIVE e(id) AS (
           SELECT min(entity_id) FROM audit_call_index
           UNION ALL SELECT (SELECT min(entity_id) FROM audit_call_index WHERE entity_id > e.id) FROM e WHERE e.id IS NOT NULL
         ) SELECT id FROM e WHERE id IS NOT NULL LIMIT 100000`,
      )
      .all(),
  );
  // A device without an identity of its own (an HA discovery device, a Zigbee2MQTT group) is kept by
  // `<source>:<id>` (home/home-model.ts identityOf); a Zigbee2MQTT device by its IEEE address, which is no id.
  for (const table of ['home_devices', 'home_entities'])
    for (const { id } of db.prepare(`SELECT id FROM ${table}`).all() as Array<{ id: string }>) {
      const i = id.indexOf(':');
      const [own, key] = id.slice(i + 1).split('#', 2) as [string, string | undefined];
      if (i > 0 && !(id.startsWith('zigbee2mqtt:') && /^0x[0-9a-f]{16}$/.test(own))) {
        ids.add(own);
        if (key) entities.add(`${own}.${key}`);
      }
    }
  const patterns: Matcher[] = [];
  const entityPatterns: Matcher[] = [];
  for (const { target } of db.prepare("SELECT target FROM policy_rules WHERE target_type = 'entity'").all() as Array<{ target: string }>) {
    for (const alternative of target.split('|')) {
      const part = devicePart(alternative);
      // `*` or `*.lock` apply whatever the ids are; a device part with letters in it names devices.
      if (!isWildcard(part)) ids.add(part);
      else if (/[^*?]/.test(part)) patterns.push(compileGlob(part));
      if (!isWildcard(alternative)) entities.add(alternative);
      else if (alternative !== '*') entityPatterns.push(compileGlob(alternative));
    }
  }
  return { ids, patterns, entities, entityPatterns };
}

const NO_LEGACY: LegacyIds = { ids: new Set(), patterns: [], entities: new Set(), entityPatterns: [] };

export class DeviceIds extends IdStore {
  private legacy?: LegacyIds;
  private readonly max: number;
  private readonly log?: Logger;
  private readonly notices = new PerKeyThrottle();
  private readonly storedId?: { get(id: string): unknown };
  /** Ids the rest of the home holds (device files, other sources): set by the assembly. */
  inUse: (id: string) => boolean = () => false;
  /** The keys of the devices' entities (the part after the dot), kept as the ids are; committed with them. */
  readonly entityKeys: EntityKeys;

  constructor(db: Db | undefined, options: DeviceIdOptions = {}) {
    super(db, {
      table: 'device_ids',
      scope: 'source',
      id: 'id',
      uniqueWithin: 'store',
      log: options.log,
      notStored: 'device ids could not be read or stored (read-only or locked database?): ids not stored are kept for this run only',
      lost: (lost) => `${lost} device id(s) were given by another Hearth process at the same moment; kept for this run only`,
    });
    this.max = options.max ?? MAX_DEVICE_IDS;
    this.log = options.log;
    this.legacy = options.legacy;
    this.entityKeys = new EntityKeys(db, () => this.legacyIds(), { log: options.log });
    this.storedId = db?.prepare('SELECT 1 FROM device_ids WHERE id = ?');
  }

  /** The id a source's identity holds, if it has one. */
  idOf(source: string, identity: string): string | undefined {
    return this.givenTo(source, identity);
  }

  /** The lookup handed to one source's adapter. */
  lookup(source: string): DeviceIdLookup {
    return (request) => this.idFor(source, request);
  }

  /**
   * The id of a source's device: the one it was given when first seen, else a new one, in this order: the
   * legacy id where the database still refers to it; the id made from its name, numbered past every id held;
   * past the cap, the legacy id, unstored (made from the identity, so the same on every run), if no one holds it.
   * A new id is held at once and written at the next commit().
   */
  idFor(source: string, request: DeviceIdRequest): string | undefined {
    const known = this.known(source, request.identity);
    if (known !== undefined) return known;
    if (this.size >= this.max) return this.pastTheCap(source, request);
    const legacy = this.legacyIds();
    // The legacy id is made from this identity alone: no other identity ever had it. A device file with that id
    // overrode this device before, and still does (files win).
    const legacyOurs = DEVICE_ID_RE.test(request.legacy) && !this.holds(request.legacy) && !this.storedElsewhere(request.legacy);
    if (legacyOurs && (legacy.ids.has(request.legacy) || legacy.patterns.some((m) => m(request.legacy))))
      return this.give(source, request.identity, request.legacy);
    const base = deviceIdFromName(request.name);
    // A name with no letters or digits to make an id of: the identity's own id.
    if (!base) return legacyOurs && !this.inUse(request.legacy) ? this.give(source, request.identity, request.legacy) : undefined;
    for (let n = 1; n < 10_000; n++) {
      const id = n === 1 ? base : withNumber(base, n);
      if (!this.taken(id)) return this.give(source, request.identity, id);
    }
    return undefined;
  }

  /** Write the ids (and entity keys) given since the last commit, each in one transaction. */
  override commit(): void {
    this.entityKeys.commit();
    super.commit();
  }

  /** Whether a new identity may not take this id: another identity holds it, the home has it, or the database refers to it. */
  private taken(id: string): boolean {
    return this.holds(id) || this.inUse(id) || this.legacyIds().ids.has(id) || this.storedElsewhere(id);
  }

  private storedElsewhere(id: string): boolean {
    return !!this.read(() => this.storedId?.get(id));
  }

  /**
   * Past the cap nothing is stored: the identity's own id, made from it alone, so the same on every run and every
   * list without a row (a device file with that id overrides the device, as it always did); none when a stored
   * name-made id is that text.
   */
  private pastTheCap(source: string, request: DeviceIdRequest): string | undefined {
    const free = DEVICE_ID_RE.test(request.legacy) && !this.holds(request.legacy) && !this.storedElsewhere(request.legacy);
    const quiet = this.notices.take(`cap ${source}`);
    if (quiet !== undefined)
      this.log?.warn(
        { source, max: this.max, suppressed: quiet },
        `${source}: ${this.max} devices already have ids (discovery.max_devices); a new one gets the id of its own identity (${request.legacy}), not one from its name, and it is not stored`,
      );
    return free ? request.legacy : undefined;
  }

  private legacyIds(): LegacyIds {
    if (!this.legacy) {
      try {
        this.legacy = this.db ? legacyIdsInUse(this.db) : NO_LEGACY;
      } catch (err) {
        this.notStored(err);
        this.legacy = NO_LEGACY;
      }
    }
    return this.legacy;
  }
}
