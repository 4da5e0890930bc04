// Stable entity keys, the part after the dot of an entity id (`dehumidifier.energy_power`), as Home Assistant's
// entity registry keeps an entity id once given. A discovered entity's key is made once, when its identity at its
// source (an HA discovery unique_id, else its discovery id) is first seen under its device: from what the source
// says the id should be (HA's object_id / default_entity_id), else from the entity's name within its device, as
// Home Assistant makes `sensor.dehumidifier_energy_power` from "Dehumidifier" + "ENERGY Power". It is unique within
// its device (`_2` for a newcomer named alike) and kept in SQLite (migration 0023), so a restart, the order configs
// arrive in, or a newcomer never moves it: rules, approvals, history, the audit and the home's choices name it.
// Until a person forgets its device (`hearth devices forget`), or what a present device no longer has: then its
// row goes, and the entity announced again gets a key as a new one would.
//
// An installation upgraded from keys made of unique_ids (`8caab5c1d2e3_rl_1`, a Tasmota MAC) keeps the old key of
// every entity its database refers to (device-ids.ts legacyIdsInUse). Device-controlled input creates rows here, so
// they are capped: past the cap a newcomer gets its old-style key, unstored (the same on every run). How keys are
// held, written and forgotten is the id store's (id-store.ts); what a key is made of is this file's.
import type { Db } from '../db/database.js';
import type { Logger } from '../log.js';
import { shortHash } from '../util/slug.js';
import type { LegacyIds } from './device-ids.js';
import { IdStore } from './id-store.js';

/** Most entities given a key (a home has a few thousand; a forged stream of unique_ids must not grow the file). */
export const MAX_ENTITY_KEYS = 100_000;
/** Entity keys follow the device-file rule. */
const KEY_RE = /^[a-z0-9][a-z0-9_]{0,63}$/;

export interface EntityKeyRequest {
  /** The entity's identity at its source (`uid switch 8CAAB5C1D2E3_RL_1`, `did <discovery hash>`). */
  identity: string;
  /** The key made the way Home Assistant makes an entity id: object_id or default_entity_id, else its own name. */
  wanted: string;
  /** The keys an older Hearth gave it (from its unique_id), kept where the database still refers to one. */
  legacy: readonly string[];
}

/** `energy_power_2`: a number within the 64 characters of a key. */
function withNumber(base: string, n: number): string {
  const suffix = `_${n}`;
  return `${base.slice(0, 64 - suffix.length).replace(/_+$/, '')}${suffix}`;
}

/** `energy_power_3f2a1c`: the identity's own mark, the same on every run. */
function withHash(base: string, identity: string): string {
  const suffix = `_${shortHash(identity)}`;
  return `${base.slice(0, 64 - suffix.length).replace(/_+$/, '')}${suffix}`;
}

function wantedKey(request: EntityKeyRequest): string {
  return KEY_RE.test(request.wanted) ? request.wanted : 'entity';
}

export class EntityKeys extends IdStore {
  private capSaid = false;
  private readonly storedKey?: { get(deviceId: string, key: string): unknown };

  constructor(
    db: Db | undefined,
    /** The ids the database refers to (read once, by the device ids' store). */
    private readonly legacy: () => LegacyIds,
    private readonly options: { log?: Logger; max?: number } = {},
  ) {
    super(db, {
      table: 'entity_keys',
      scope: 'device_id',
      id: 'key',
      uniqueWithin: 'scope',
      log: options.log,
      notStored: 'entity keys could not be read or stored (read-only or locked database?): keys not stored are kept for this run only',
      lost: (lost) => `${lost} entity key(s) were given by another Hearth process at the same moment; kept for this run only`,
    });
    this.storedKey = db?.prepare('SELECT 1 FROM entity_keys WHERE device_id = ? AND key = ?');
  }

  /** The key an entity of this device holds, if it has one. */
  keyOf(deviceId: string, identity: string): string | undefined {
    return this.givenTo(deviceId, identity);
  }

  /**
   * The key of an entity of a device: the one it was given when first seen, else, in this order, an old key the
   * database refers to, the wanted key, the wanted key numbered past every key the device's entities hold. A new
   * key is held at once and written at the next commit().
   */
  keyFor(deviceId: string, request: EntityKeyRequest): string {
    const known = this.known(deviceId, request.identity);
    if (known !== undefined) return known;
    const wanted = wantedKey(request);
    const legacy = this.legacy();
    const referred = request.legacy.find(
      (key) =>
        KEY_RE.test(key) &&
        !this.taken(deviceId, key, legacy, true) &&
        (legacy.entities.has(`${deviceId}.${key}`) || legacy.entityPatterns.some((m) => m(`${deviceId}.${key}`) && !m(`${deviceId}.${wanted}`))),
    );
    if (referred) return this.give(deviceId, request.identity, referred);
    if (this.size >= (this.options.max ?? MAX_ENTITY_KEYS)) return this.pastTheCap(deviceId, request);
    for (let n = 1; n < 10_000; n++) {
      const key = n === 1 ? wanted : withNumber(wanted, n);
      if (!this.taken(deviceId, key, legacy)) return this.give(deviceId, request.identity, key);
    }
    // Ten thousand entities of one device named alike (the per-device cap is far below): the identity's own.
    return this.keep(deviceId, request.identity, withHash(wanted, request.identity));
  }

  /**
   * A person said a device is gone (`hearth devices forget`): its entities' keys are forgotten, in the database too,
   * so a device announced again gets keys as a new device would.
   */
  forgetDevice(deviceId: string): void {
    this.forget(deviceId);
  }

  /** A person said a present device no longer has these entities (`<device id>.<key>`): their keys are forgotten. */
  forgetEntities(entityIds: readonly string[]): void {
    const byDevice = new Map<string, Set<string>>();
    for (const id of entityIds) {
      const dot = id.indexOf('.');
      if (dot <= 0) continue;
      const deviceId = id.slice(0, dot);
      let keys = byDevice.get(deviceId);
      if (!keys) byDevice.set(deviceId, (keys = new Set()));
      keys.add(id.slice(dot + 1).split('#', 1)[0]!);
    }
    for (const [deviceId, keys] of byDevice) this.forget(deviceId, keys);
  }

  /**
   * Whether a newcomer may not take this key: another entity of the device holds it, or the database refers to that
   * entity id (an entity not back yet keeps it), unless it is the newcomer's own old key.
   */
  private taken(deviceId: string, key: string, legacy: LegacyIds, own = false): boolean {
    if (this.holds(key, deviceId)) return true;
    if (this.read(() => this.storedKey?.get(deviceId, key))) return true;
    return !own && legacy.entities.has(`${deviceId}.${key}`);
  }

  /** Past the cap nothing is stored: the first old-style key no entity of the device holds, the same on every run. */
  private pastTheCap(deviceId: string, request: EntityKeyRequest): string {
    if (!this.capSaid) {
      this.capSaid = true;
      this.options.log?.warn(
        { max: this.options.max ?? MAX_ENTITY_KEYS },
        'entity keys: the most entities are remembered; a new one gets a key of its unique_id, not of its name, and it is not stored',
      );
    }
    const free = request.legacy.find((key) => KEY_RE.test(key) && !this.holds(key, deviceId));
    return this.keep(deviceId, request.identity, free ?? withHash(request.legacy[0] ?? wantedKey(request), request.identity));
  }
}
