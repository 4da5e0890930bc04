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
import type { Device, Entity } from '../model.js';
import { type Area, areaStore } from './areas.js';
import { type DeviceChoice, deviceChoiceStore } from './device-choices.js';
import { type EntityChoice, entityChoiceStore } from './entity-choices.js';
import { type Floor, floorStore } from './floors.js';
import { saidAs } from './place-names.js';
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
    const said = saidAs(text);
    for (const [id, area] of this.areas.entries()) if (saidAs(area.name) === said || area.aliases.some((a) => saidAs(a) === said)) return { id, area };
    return undefined;
  }

  findFloor(text: string): { id: string; floor: Floor } | undefined {
    const direct = this.floors.get(text);
    if (direct) return { id: text, floor: direct };
    const said = saidAs(text);
    for (const [id, floor] of this.floors.entries()) if (saidAs(floor.name) === said || floor.aliases.some((a) => saidAs(a) === said)) return { id, floor };
    return undefined;
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
    const sourceAreas = new Map<string, string>();
    for (const { device } of input) {
      for (const a of [device.area, ...device.entities.map((e) => e.area)]) if (a && !sourceAreas.has(saidAs(a))) sourceAreas.set(saidAs(a), a);
    }
    this.sourceAreas = sourceAreas;
    // Said once per rebuild, not once per device: what a name may start with.
    const said = this.knownAreas().flatMap((a) => [a.name, ...a.aliases].map((n) => ({ key: saidAs(n), name: a.name })).filter((x) => x.key));
    this.areaWords = said.sort((a, b) => b.key.length - a.key.length);
    return input.map(({ device, source }) => this.applyOne(device, identityOf(device, source)));
  }

  /** An area's name and floor as stored, or as the source spelled it when nobody stored it. */
  private place(name: string | undefined, fallbackFloor?: string): { area?: string; floor?: string } {
    if (!name) return { floor: fallbackFloor };
    const stored = this.findArea(name);
    if (!stored) return { area: name, floor: fallbackFloor };
    return { area: stored.area.name, floor: (stored.area.floor && this.floors.get(stored.area.floor)?.name) || fallbackFloor };
  }

  private applyOne(device: Device, identity: string): Device {
    const choice = this.devices.get(identity);
    let placed: { area?: string; floor?: string };
    let areaFrom: Device['areaFrom'];
    const chosenArea = choice?.area === null ? null : choice?.area ? this.areas.get(choice.area) : undefined;
    if (chosenArea === null) {
      placed = {};
      areaFrom = 'person';
    } else if (chosenArea) {
      placed = this.place(chosenArea.name);
      areaFrom = 'person';
    } else {
      placed = this.place(device.area, device.floor);
      areaFrom = device.area ? 'source' : undefined;
    }
    const name = choice?.name ?? device.name;
    const aliases = choice?.aliases ?? [];
    // A device's aliases name its main entity (the one called as the device is; else its first), never its
    // readings and settings too: "turn on the espresso" is the plug's switch, not its power sensor.
    const main = device.entities.find((e) => e.name === device.name) ?? device.entities[0];
    const entities = device.entities.map((e) => {
      const ec = this.entities.get(entityKeyOf(identity, e));
      let where: { area?: string; floor?: string };
      if (ec?.area === null) where = {};
      else if (ec?.area && this.areas.get(ec.area)) where = this.place(this.areas.get(ec.area)!.name);
      // An entity the source placed with its device follows the device; one placed elsewhere stays there.
      else if (!e.area || e.area === device.area) where = placed.area || areaFrom ? placed : { floor: e.floor };
      else where = this.place(e.area, e.floor);
      const renamed = choice?.name && e.name.startsWith(device.name) ? `${choice.name}${e.name.slice(device.name.length)}` : e.name;
      const out: Entity = {
        ...e,
        name: renamed,
        aliases: aliases.length && e === main ? [...e.aliases, ...aliases] : e.aliases,
        exposed: ec?.exposed ?? choice?.exposed ?? exposedByDefault(e),
      };
      // A person's name for the device names its tools; otherwise the source's whole name does.
      if (renamed !== e.name) out.toolBase = renamed;
      if (where.area) out.area = where.area;
      else delete out.area;
      if (where.floor) out.floor = where.floor;
      else delete out.floor;
      return out;
    });
    const out: Device = { ...device, identity, name, entities };
    if (placed.area) out.area = placed.area;
    else delete out.area;
    if (placed.floor) out.floor = placed.floor;
    else delete out.floor;
    if (areaFrom) out.areaFrom = areaFrom;
    if (aliases.length) out.aliases = aliases;
    if (!out.area) {
      const suggested = this.leadingArea(name);
      if (suggested) out.suggestedArea = suggested;
    }
    return out;
  }

  /** Every known area's name and aliases as said, longest first (set by apply). */
  private areaWords: Array<{ key: string; name: string }> = [];

  /** A known area whose name the text starts with, as a whole word ("Kitchen spots" -> Kitchen); the longest wins. */
  private leadingArea(text: string): string | undefined {
    const said = saidAs(text);
    return this.areaWords.find((a) => said.startsWith(`${a.key} `))?.name;
  }
}
