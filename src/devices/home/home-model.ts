// The home as people arrange it, laid over what the sources say: floors, areas, and a person's choices for
// devices and entities (area, name, aliases, exposed), each in its own store (record-store.ts). `apply` turns
// the sources' devices into the devices everyone downstream sees; the registry calls it on every rebuild and
// rebuilds once per change announced here, so each consumer recomputes once per change and never per call.
//
// Where an area comes from, in order: a person (stored here), then the source (Home Assistant's
// `suggested_area`, the `<area>/` of a Zigbee2MQTT friendly name, a device file's `area`), else none. A name
// that starts with a known area ("Kitchen spots") is a suggestion only (Device.suggestedArea).
import { EventEmitter } from 'node:events';
import type { Db } from '../../db/database.js';
import { type Device, deviceWith, endsWithPart, type Entity, entityWith } from '../model.js';
import { type Area, areaStore } from './areas.js';
import { type DeviceChoice, deviceChoiceStore } from './device-choices.js';
import { type EntityChoice, entityChoiceStore } from './entity-choices.js';
import { type Floor, floorStore } from './floors.js';
import { saidAs } from './place-names.js';
import { readableName } from '../device-text.js';
import type { RecordChange, RecordStore } from './record-store.js';

export type HomeStoreName = 'floors' | 'areas' | 'devices' | 'entities';
export type HomeChange = RecordChange<object> & { store: HomeStoreName };

export interface HomeModelEvents {
  change: [change: HomeChange];
  /** A batch of changes (an imported file) is over: consumers recompute once for all of it. */
  settled: [];
}

/** A device as its source gave it, with the registry's name for that source. */
export interface SourcedDevice {
  device: Device;
  source: string;
}

/** The identity a device's choices are kept by. */
export function identityOf(device: Device, source: string): string {
  return device.identity ?? `${source}:${device.id}`;
}

/** The key an entity's choices are kept by. */
export function entityKeyOf(identity: string, entity: Entity): string {
  return `${identity}#${entity.key}`;
}

/** Whether agents are shown an entity nobody chose for: everyday controls and readings are; settings and diagnostics are not. */
export function exposedByDefault(entity: Entity): boolean {
  return !entity.category;
}

export class HomeModel extends EventEmitter<HomeModelEvents> {
  readonly floors: RecordStore<Floor>;
  readonly areas: RecordStore<Area>;
  readonly devices: RecordStore<DeviceChoice>;
  readonly entities: RecordStore<EntityChoice>;
  /** Areas the sources named at the last apply, by how they are said: known without being stored. */
  private sourceAreas = new Map<string, string>();

  constructor(db?: Db) {
    super();
    this.floors = floorStore(db);
    this.areas = areaStore(db);
    this.devices = deviceChoiceStore(db);
    this.entities = entityChoiceStore(db);
    this.areas.on('change', () => {
      this.saidIndex = undefined;
    });
    const forward = (store: HomeStoreName) => (c: RecordChange<object>) => this.emit('change', { ...c, store });
    this.floors.on('change', forward('floors'));
    this.areas.on('change', forward('areas'));
    this.devices.on('change', forward('devices'));
    this.entities.on('change', forward('entities'));
  }

  private depth = 0;

  /** Whether changes are being made in a batch (consumers wait for 'settled'). */
  get batching(): boolean {
    return this.depth > 0;
  }

  /** Make many changes as one: each is still announced, and 'settled' once at the end. */
  batch<T>(fn: () => T): T {
    this.depth++;
    try {
      return fn();
    } finally {
      if (--this.depth === 0) this.emit('settled');
    }
  }

  /** A stored area by id, name or alias (as said), with its id. */
  findArea(text: string): { id: string; area: Area } | undefined {
    const direct = this.areas.get(text);
    if (direct) return { id: text, area: direct };
    const id = this.said().areas.get(saidAs(text));
    const area = id === undefined ? undefined : this.areas.get(id);
    return area && id !== undefined ? { id, area } : undefined;
  }

  findFloor(text: string): { id: string; floor: Floor } | undefined {
    const direct = this.floors.get(text);
    if (direct) return { id: text, floor: direct };
    const said = saidAs(text);
    for (const [id, floor] of this.floors.entries()) if (saidAs(floor.name) === said || floor.aliases.some((a) => saidAs(a) === said)) return { id, floor };
    return undefined;
  }

  /**
   * The stored areas by how their names and aliases are said, computed once per change of the areas (never per
   * device or call): an apply over 10,000 entities asked saidAs() of every area for each of them.
   */
  private saidIndex?: { areas: Map<string, string> };
  private said(): { areas: Map<string, string> } {
    if (this.saidIndex) return this.saidIndex;
    const areas = new Map<string, string>();
    for (const [id, a] of this.areas.entries())
      for (const n of [a.name, ...a.aliases]) {
        const k = saidAs(n);
        if (!areas.has(k)) areas.set(k, id);
      }
    this.saidIndex = { areas };
    return this.saidIndex;
  }

  /** An area a source names but nobody stored ("Living room" from `Living room/Ceiling light`), as the source spells it. */
  sourceArea(text: string): string | undefined {
    return this.sourceAreas.get(saidAs(text));
  }

  /** Every area known: the stored ones and those only sources name. */
  knownAreas(): Array<{ id?: string; name: string; floor?: string; aliases: string[]; stored: boolean }> {
    const out: Array<{ id?: string; name: string; floor?: string; aliases: string[]; stored: boolean }> = [];
    const said = new Set<string>();
    for (const [id, a] of this.areas.entries()) {
      said.add(saidAs(a.name));
      for (const alias of a.aliases) said.add(saidAs(alias));
      out.push({ id, name: a.name, ...(a.floor ? { floor: this.floors.get(a.floor)?.name } : {}), aliases: a.aliases, stored: true });
    }
    for (const [key, name] of this.sourceAreas) if (!said.has(key)) out.push({ name, aliases: [], stored: false });
    return out.sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The sources' devices as the home has them: areas, floors, names, aliases and exposure resolved. */
  apply(input: SourcedDevice[]): Device[] {
    // Each distinct name said once per apply: a home has tens of areas and thousands of entities naming them.
    const saidOf = new Map<string, string>();
    const say = (name: string): string => {
      let k = saidOf.get(name);
      if (k === undefined) saidOf.set(name, (k = saidAs(name)));
      return k;
    };
    const sourceAreas = new Map<string, string>();
    const rankOf = new Map<string, number>();
    // One spelling per area as said: `Kids room/Ceiling` and `upstairs/kids_room/nightlight` are both in the Kids
    // room; a spelling with underscores gives way to one without, one all in lower case to one an owner
    // capitalised (`office/desk_fan` beside `Office/Thermometer` is the Office), and among equals the first stays.
    // One with underscores is said with spaces when it is the only one.
    const note = (a: string | undefined) => {
      if (!a) return;
      const k = say(a);
      const rank = spellingRank(a);
      if (rank <= (rankOf.get(k) ?? -1)) return;
      rankOf.set(k, rank);
      sourceAreas.set(k, readableName(a));
    };
    for (const { device } of input) {
      note(device.area);
      for (const e of device.entities) note(e.area);
    }
    this.sourceAreas = sourceAreas;
    // Said once per rebuild, not once per device: what a name may start with.
    const said = this.knownAreas().flatMap((a) => [a.name, ...a.aliases].map((n) => ({ key: say(n), name: a.name })).filter((x) => x.key));
    this.areaWords = said.sort((a, b) => b.key.length - a.key.length);
    const ctx: ApplyContext = { say };
    return input.map(({ device, source }) => this.applyOne(device, identityOf(device, source), ctx));
  }

  /** An area's name and floor as stored, or as the source spelled it when nobody stored it. */
  private place(ctx: ApplyContext, name: string | undefined, fallbackFloor?: string): { area?: string; floor?: string } {
    if (!name) return { floor: fallbackFloor };
    const direct = this.areas.get(name);
    const id = direct ? name : this.said().areas.get(ctx.say(name));
    const stored = direct ?? (id === undefined ? undefined : this.areas.get(id));
    if (!stored) return { area: this.sourceAreas.get(ctx.say(name)) ?? name, floor: fallbackFloor };
    return { area: stored.name, floor: (stored.floor && this.floors.get(stored.floor)?.name) || fallbackFloor };
  }

  private applyOne(device: Device, identity: string, ctx: ApplyContext): Device {
    const choice = this.devices.size ? this.devices.get(identity) : undefined;
    let placed: { area?: string; floor?: string };
    let areaFrom: Device['areaFrom'];
    const chosenArea = choice?.area === null ? null : choice?.area ? this.areas.get(choice.area) : undefined;
    if (chosenArea === null) {
      placed = {};
      areaFrom = 'person';
    } else if (chosenArea) {
      placed = this.place(ctx, chosenArea.name);
      areaFrom = 'person';
    } else {
      placed = this.place(ctx, device.area, device.floor);
      areaFrom = device.area ? 'source' : undefined;
    }
    const name = choice?.name ?? device.name;
    const aliases = choice?.aliases ?? [];
    // A device's aliases name its main entity (the one called as the device is; else its first), never its
    // readings and settings too: "turn on the espresso" is the plug's switch, not its power sensor.
    const main = device.entities.find((e) => e.name === device.name) ?? device.entities[0];
    // Whether an entity is called as the device is: then no other may be called so.
    const named = main?.name === device.name;
    const mapped = device.entities.map((e) => {
      const ec = this.entities.size ? this.entities.get(entityKeyOf(identity, e)) : undefined;
      let where: { area?: string; floor?: string };
      if (ec?.area === null) where = {};
      else if (ec?.area && this.areas.get(ec.area)) where = this.place(ctx, this.areas.get(ec.area)!.name);
      // An entity the source placed with its device follows the device; one placed elsewhere stays there.
      else if (!e.area || e.area === device.area) where = placed.area || areaFrom ? placed : { floor: e.floor };
      else where = this.place(ctx, e.area, e.floor);
      const renamed = choice?.name && e.name.startsWith(device.name) ? personsEntityName(choice.name, e.name.slice(device.name.length), named) : e.name;
      const entityAliases = aliases.length && e === main ? [...e.aliases, ...aliases] : e.aliases;
      const exposed = ec?.exposed ?? choice?.exposed ?? exposedByDefault(e);
      // Nothing to change: the source's own object (undefined `exposed` reads as shown). A copy per entity per
      // rebuild was ~1.8 KiB each, kept beside the source's (issue 45).
      if (renamed === e.name && entityAliases === e.aliases && where.area === e.area && where.floor === e.floor && (e.exposed ?? true) === exposed) return e;
      // Copied by entityWith: every copy laid out alike (model.ts; issue 45).
      return entityWith(e, {
        name: renamed,
        aliases: entityAliases,
        exposed,
        // A person's name for the device names its tools; otherwise the source's whole name does.
        toolBase: renamed !== e.name ? renamed : e.toolBase,
        area: where.area || undefined,
        floor: where.floor || undefined,
      });
    });
    // The source's list when no entity changed (one array per device less).
    const entities = mapped.every((e, i) => e === device.entities[i]) ? device.entities : mapped;
    return deviceWith(device, {
      identity,
      name,
      entities,
      area: placed.area || undefined,
      floor: placed.floor || undefined,
      areaFrom,
      aliases: aliases.length ? aliases : device.aliases,
      suggestedArea: (!placed.area && this.leadingArea(ctx, name)) || device.suggestedArea,
    });
  }

  /** Every known area's name and aliases as said, longest first (set by apply). */
  private areaWords: Array<{ key: string; name: string }> = [];

  /** A known area whose name the text starts with, as a whole word ("Kitchen spots" -> Kitchen); the longest wins. */
  private leadingArea(ctx: ApplyContext, text: string): string | undefined {
    const said = ctx.say(text);
    return this.areaWords.find((a) => said.startsWith(`${a.key} `))?.name;
  }
}

/** What one apply computes once for all its devices. */
interface ApplyContext {
  say: (name: string) => string;
}

/**
 * An entity's name under the name a person gave its device: the device's name and the entity's own part
 * (" Battery"), or the device's name alone where it already ends with that part ("Back door contact" for the
 * contact of a device renamed so, never "Back door contact Contact"), unless an entity is called as the device is.
 */
function personsEntityName(deviceName: string, own: string, named: boolean): string {
  return !named && endsWithPart(deviceName, own) ? deviceName : `${deviceName}${own}`;
}

/** How much of an owner's spelling an area's name shows: underscores (0), all in lower case (1), capitalised (2). */
function spellingRank(text: string): number {
  if (text.includes('_')) return 0;
  return text === text.toLowerCase() ? 1 : 2;
}
