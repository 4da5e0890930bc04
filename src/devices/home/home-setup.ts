// What a person (through the CLI, the HTTP API or MCP) may change about the home: areas and floors, and per
// device its area, name, aliases and exposure, per entity its area and exposure. Every door calls these, so a
// hostile name is cleaned the same way and a clash is refused the same way everywhere. A device is found by its
// id, its identity at the source, or its name as people say it (with its area: "Living room/Ceiling light").
//
// A device assigned to an area nobody stored: an area a source already names ("Living room" from
// `Living room/Ceiling light`) is stored then; any other is refused, naming how to add it, unless `create`.
import type { Principal } from '../../core/principal.js';
import type { Device, Entity } from '../model.js';
import type { DeviceRegistry } from '../registry.js';
import type { Area } from './areas.js';
import type { DeviceChoice } from './device-choices.js';
import type { EntityChoice } from './entity-choices.js';
import type { Floor } from './floors.js';
import { entityKeyOf, type HomeModel } from './home-model.js';
import { aliasList, HomeError, placeId, placeName, saidAs } from './place-names.js';

export interface AreaJson {
  id: string | null;
  name: string;
  floor: string | null;
  aliases: string[];
  /** false: only a source names it (nobody stored it yet). */
  stored: boolean;
  devices: number;
}

export interface FloorJson {
  id: string;
  name: string;
  level: number | null;
  aliases: string[];
  areas: string[];
}

export interface HomeDeviceJson {
  id: string;
  identity: string;
  name: string;
  area: string | null;
  floor: string | null;
  /** person: a person chose it; source: the source says so; null: no area. */
  areaFrom: 'person' | 'source' | null;
  suggestedArea: string | null;
  aliases: string[];
  source: string;
  entities: Array<{ id: string; key: string; name: string; kind: string; area: string | null; category: string | null; exposed: boolean }>;
}

const MAX_LISTED = 12;

/** Who may change the home (areas, floors, names, aliases, exposure): an owner, whichever door asks. */
export function mayArrangeHome(principal: Principal): boolean {
  return principal.roles.includes('owner');
}

export class HomeSetup {
  readonly home: HomeModel;

  constructor(private readonly registry: DeviceRegistry) {
    this.home = registry.home;
  }

  // ------------------------------------------------------------------ reading

  deviceJson(d: Device): HomeDeviceJson {
    return {
      id: d.id,
      identity: d.identity ?? d.id,
      name: d.name,
      area: d.area ?? null,
      floor: d.floor ?? null,
      areaFrom: d.areaFrom ?? null,
      suggestedArea: d.suggestedArea ?? null,
      aliases: d.aliases ?? [],
      source: d.source,
      entities: d.entities.map((e) => ({
        id: e.id,
        key: e.key,
        name: e.name,
        kind: e.kind,
        area: e.area ?? null,
        category: e.category ?? null,
        exposed: e.exposed !== false,
      })),
    };
  }

  devices(): HomeDeviceJson[] {
    return this.registry.devices().map((d) => this.deviceJson(d));
  }

  areas(): AreaJson[] {
    const count = new Map<string, number>();
    for (const d of this.registry.devices()) if (d.area) count.set(saidAs(d.area), (count.get(saidAs(d.area)) ?? 0) + 1);
    return this.home.knownAreas().map((a) => ({
      id: a.id ?? null,
      name: a.name,
      floor: a.floor ?? null,
      aliases: a.aliases,
      stored: a.stored,
      devices: count.get(saidAs(a.name)) ?? 0,
    }));
  }

  floors(): FloorJson[] {
    return this.home.floors
      .entries()
      .map(([id, f]) => ({
        id,
        name: f.name,
        level: f.level ?? null,
        aliases: f.aliases,
        areas: this.home.areas
          .all()
          .filter((a) => a.floor === id)
          .map((a) => a.name),
      }))
      .sort((a, b) => (a.level ?? 0) - (b.level ?? 0) || a.name.localeCompare(b.name));
  }

  /** A device by id, identity, or name as said (optionally `<area>/<name>`); a name two devices share is refused, listing both. */
  device(ref: unknown, field = 'device'): Device {
    if (typeof ref !== 'string' || !ref.trim()) throw new HomeError(field, 'must name a device (its id or its name)');
    const text = ref.trim();
    const all = this.registry.devices();
    // Its id, its identity, or the address its identity holds (`0x00158d000a1b2c3d` of `zigbee2mqtt:0x00158d000a1b2c3d`):
    // the address finds a device after it was renamed from it.
    const exact = this.registry.device(text) ?? all.find((d) => d.identity === text || (text.includes(':') ? false : d.identity?.endsWith(`:${text}`)));
    if (exact) return exact;
    const slash = text.lastIndexOf('/');
    const area = slash > 0 ? saidAs(text.slice(0, slash)) : undefined;
    const said = saidAs(slash > 0 ? text.slice(slash + 1) : text);
    const matches = all.filter(
      (d) =>
        (saidAs(d.name) === said || (d.aliases ?? []).some((a) => saidAs(a) === said) || saidAs(`${d.area ?? ''} ${d.name}`) === saidAs(text)) &&
        (area === undefined || saidAs(d.area ?? '') === area),
    );
    if (matches.length === 1) return matches[0]!;
    if (matches.length > 1)
      throw new HomeError(
        field,
        `${JSON.stringify(text.slice(0, 80))} names ${matches.length} devices: ${matches
          .slice(0, MAX_LISTED)
          .map((d) => `${d.id} (${d.area ?? 'no area'})`)
          .join(', ')}; give the id, or <area>/<name>`,
        'conflict',
      );
    throw new HomeError(field, `no device ${JSON.stringify(text.slice(0, 80))}; \`hearth devices\` (or GET /api/home/devices) lists them`, 'not_found');
  }

  entity(ref: unknown, field = 'entity'): Entity {
    if (typeof ref !== 'string' || !ref.trim()) throw new HomeError(field, 'must name an entity by its id (device.key)');
    const entity = this.registry.entity(ref.trim());
    if (!entity) throw new HomeError(field, `no entity ${JSON.stringify(ref.slice(0, 80))}; \`hearth devices\` lists them`, 'not_found');
    return entity;
  }

  private identity(device: Device): string {
    return device.identity ?? device.id;
  }

  /** The stored area a person means: stored, or named by a source (stored now), or created when asked to. */
  private areaIdFor(text: unknown, field: string, create: boolean): string {
    const name = placeName(field, text);
    const found = this.home.findArea(name);
    if (found) return found.id;
    const fromSource = this.home.sourceArea(name);
    if (!fromSource && !create) {
      const known = this.home.knownAreas().map((a) => a.name);
      throw new HomeError(
        field,
        `no area ${JSON.stringify(name)}${known.length ? `; the areas are ${known.slice(0, MAX_LISTED).join(', ')}${known.length > MAX_LISTED ? ', ...' : ''}` : ''}; add it with \`hearth areas add ${JSON.stringify(name)}\` (or give --create)`,
        'not_found',
      );
    }
    return this.storeArea(fromSource ?? name, {}).id;
  }

  private storeArea(name: string, extra: Partial<Area>): { id: string; area: Area } {
    let id = placeId(name);
    for (let n = 2; this.home.areas.get(id); n++) id = `${placeId(name)}_${n}`;
    const area = this.home.areas.set(id, { name, aliases: [], ...extra });
    return { id, area };
  }

  /** Another device that would be said the same way in that area: refused, naming it. */
  private clash(device: Device, name: string, area: string | undefined): void {
    const other = this.registry.devices().find((d) => d.id !== device.id && saidAs(d.name) === saidAs(name) && saidAs(d.area ?? '') === saidAs(area ?? ''));
    if (other)
      throw new HomeError(
        'name',
        `${JSON.stringify(name)} is already the name of ${other.id} in ${area ? JSON.stringify(area) : 'no area'}: two devices said the same way in one area cannot be told apart; choose another name`,
        'conflict',
      );
  }

  private setChoice(device: Device, change: (before: DeviceChoice) => DeviceChoice): Device {
    const id = this.identity(device);
    const next = change({ ...(this.home.devices.get(id) ?? {}) });
    for (const k of Object.keys(next) as Array<keyof DeviceChoice>) if (next[k] === undefined) delete next[k];
    if (!Object.keys(next).length) this.home.devices.remove(id);
    else this.home.devices.set(id, next);
    return this.registry.device(device.id) ?? device;
  }

  private setEntityChoice(entity: Entity, change: (before: EntityChoice) => EntityChoice): Entity {
    const device = this.registry.device(entity.deviceId);
    if (!device) throw new HomeError('entity', `${entity.id} has no device`, 'not_found');
    const key = entityKeyOf(this.identity(device), entity);
    const next = change({ ...(this.home.entities.get(key) ?? {}) });
    for (const k of Object.keys(next) as Array<keyof EntityChoice>) if (next[k] === undefined) delete next[k];
    if (!Object.keys(next).length) this.home.entities.remove(key);
    else this.home.entities.set(key, next);
    return this.registry.entity(entity.id) ?? entity;
  }

  // ------------------------------------------------------------------ devices and entities

  /** Put a device (all its entities that follow it) in an area; null: in no area, whatever the source says; undefined: back to the source's. */
  setDeviceArea(ref: unknown, area: string | null | undefined, options: { create?: boolean } = {}): Device {
    const device = this.device(ref);
    if (area === null || area === undefined) return this.setChoice(device, (c) => ({ ...c, area }));
    const id = this.areaIdFor(area, 'area', options.create ?? false);
    this.clash(device, device.name, this.home.areas.get(id)?.name);
    return this.setChoice(device, (c) => ({ ...c, area: id }));
  }

  /** The name a device is said by within its area; undefined: the source's name again. */
  renameDevice(ref: unknown, name: string | undefined): Device {
    const device = this.device(ref);
    if (name === undefined) return this.setChoice(device, (c) => ({ ...c, name: undefined }));
    const clean = placeName('name', name);
    this.clash(device, clean, device.area);
    return this.setChoice(device, (c) => ({ ...c, name: clean }));
  }

  setDeviceAliases(ref: unknown, aliases: unknown): Device {
    const device = this.device(ref);
    const list = aliasList('aliases', aliases);
    return this.setChoice(device, (c) => ({ ...c, aliases: list.length ? list : undefined }));
  }

  /** Whether agents are shown the device's entities (an entity's own choice still wins); undefined: back to the defaults. */
  exposeDevice(ref: unknown, exposed: boolean | undefined): Device {
    const device = this.device(ref);
    // A device-wide choice replaces the entities' own: "expose the whole plug" means all of it.
    for (const e of device.entities) {
      const key = entityKeyOf(this.identity(device), e);
      const ec = this.home.entities.get(key);
      if (ec?.exposed !== undefined) this.setEntityChoice(e, (c) => ({ ...c, exposed: undefined }));
    }
    return this.setChoice(this.registry.device(device.id) ?? device, (c) => ({ ...c, exposed }));
  }

  exposeEntity(ref: unknown, exposed: boolean | undefined): Entity {
    return this.setEntityChoice(this.entity(ref), (c) => ({ ...c, exposed }));
  }

  setEntityArea(ref: unknown, area: string | null | undefined, options: { create?: boolean } = {}): Entity {
    const entity = this.entity(ref);
    const id = area === null || area === undefined ? area : this.areaIdFor(area, 'area', options.create ?? false);
    return this.setEntityChoice(entity, (c) => ({ ...c, area: id }));
  }

  // ------------------------------------------------------------------ areas and floors

  private area(ref: unknown, field = 'area'): { id: string; area: Area } {
    const name = placeName(field, ref);
    const found = this.home.findArea(name);
    if (found) return found;
    const fromSource = this.home.sourceArea(name);
    if (fromSource) return this.storeArea(fromSource, {});
    throw new HomeError(field, `no area ${JSON.stringify(name)}; \`hearth areas\` lists them`, 'not_found');
  }

  private floor(ref: unknown, field = 'floor'): { id: string; floor: Floor } {
    const name = placeName(field, ref);
    const found = this.home.findFloor(name);
    if (found) return found;
    throw new HomeError(field, `no floor ${JSON.stringify(name)}; add it with \`hearth floors add ${JSON.stringify(name)}\``, 'not_found');
  }

  addArea(name: unknown, options: { floor?: unknown; aliases?: unknown } = {}): AreaJson {
    const clean = placeName('name', name);
    const taken = this.home.findArea(clean);
    if (taken) throw new HomeError('name', `there is already an area ${JSON.stringify(taken.area.name)}`, 'conflict');
    const floor = options.floor !== undefined && options.floor !== null ? this.floor(options.floor).id : undefined;
    const aliases = options.aliases !== undefined ? this.areaAliases(options.aliases) : [];
    const { id } = this.storeArea(clean, { aliases, ...(floor ? { floor } : {}) });
    return this.areaJson(id);
  }

  /** Aliases for an area: none may be what another area is called (by name or alias), or one phrase would name two. */
  private areaAliases(list: unknown, self?: string): string[] {
    const aliases = aliasList('aliases', list);
    for (const a of aliases) {
      const other = this.home.findArea(a);
      if (other && other.id !== self)
        throw new HomeError('aliases', `${JSON.stringify(a)} already names the area ${JSON.stringify(other.area.name)}`, 'conflict');
      // An area only a source names yet ("Kitchen" from `Kitchen/Spots`) is as taken.
      const named = other ? undefined : this.home.sourceArea(a);
      if (named) throw new HomeError('aliases', `${JSON.stringify(a)} already names the area ${JSON.stringify(named)}`, 'conflict');
    }
    return aliases;
  }

  /** The same for a floor. */
  private floorAliases(list: unknown, self?: string): string[] {
    const aliases = aliasList('aliases', list);
    for (const a of aliases) {
      const other = this.home.findFloor(a);
      if (other && other.id !== self)
        throw new HomeError('aliases', `${JSON.stringify(a)} already names the floor ${JSON.stringify(other.floor.name)}`, 'conflict');
    }
    return aliases;
  }

  private areaJson(id: string): AreaJson {
    const name = this.home.areas.get(id)!.name;
    return this.areas().find((a) => a.id === id) ?? { id, name, floor: null, aliases: [], stored: true, devices: 0 };
  }

  /** Change an area's name, floor (null: none) or aliases; devices placed in it stay there. */
  updateArea(ref: unknown, change: { name?: unknown; floor?: unknown; aliases?: unknown }): AreaJson {
    const { id, area } = this.area(ref);
    const next: Area = { ...area };
    if (change.name !== undefined) {
      next.name = placeName('name', change.name);
      const other = this.home.findArea(next.name);
      if (other && other.id !== id) throw new HomeError('name', `there is already an area ${JSON.stringify(other.area.name)}`, 'conflict');
    }
    if (change.floor === null) delete next.floor;
    else if (change.floor !== undefined) next.floor = this.floor(change.floor).id;
    if (change.aliases !== undefined) next.aliases = this.areaAliases(change.aliases, id);
    this.home.areas.set(id, next);
    return this.areaJson(id);
  }

  /** Remove a stored area: devices a person put there go back to what their source says. */
  removeArea(ref: unknown): { removed: string; devices: number } {
    // An area only a source names is its devices' names: removing it would store it and remove it again, and say
    // so while it stays. It is refused, saying what does move its devices.
    const name = placeName('area', ref);
    const fromSource = this.home.findArea(name) ? undefined : this.home.sourceArea(name);
    if (fromSource)
      throw new HomeError(
        'area',
        `${JSON.stringify(fromSource)} is named only by its devices' source (their Zigbee2MQTT names, Home Assistant's suggested_area), not stored: it cannot be removed; place its devices elsewhere with \`hearth devices area <device> <area>\``,
        'conflict',
      );
    const { id, area } = this.area(ref);
    let moved = 0;
    for (const [key, c] of this.home.devices.entries())
      if (c.area === id) {
        moved++;
        const { area: _drop, ...rest } = c;
        if (Object.keys(rest).length) this.home.devices.set(key, rest);
        else this.home.devices.remove(key);
      }
    for (const [key, c] of this.home.entities.entries())
      if (c.area === id) {
        const { area: _drop, ...rest } = c;
        if (Object.keys(rest).length) this.home.entities.set(key, rest);
        else this.home.entities.remove(key);
      }
    this.home.areas.remove(id);
    return { removed: area.name, devices: moved };
  }

  addFloor(name: unknown, options: { level?: unknown; aliases?: unknown } = {}): FloorJson {
    const clean = placeName('name', name);
    const taken = this.home.findFloor(clean);
    if (taken) throw new HomeError('name', `there is already a floor ${JSON.stringify(taken.floor.name)}`, 'conflict');
    if (options.level !== undefined) floorLevel(options.level);
    let id = placeId(clean);
    for (let n = 2; this.home.floors.get(id); n++) id = `${placeId(clean)}_${n}`;
    const aliases = options.aliases !== undefined ? this.floorAliases(options.aliases) : [];
    this.home.floors.set(id, { name: clean, aliases, ...(options.level !== undefined ? { level: options.level as number } : {}) });
    return this.floors().find((f) => f.id === id)!;
  }

  /** Change a floor's name, level or aliases; its areas stay on it. */
  updateFloor(ref: unknown, change: { name?: unknown; level?: unknown; aliases?: unknown }): FloorJson {
    const { id, floor } = this.floor(ref);
    const next: Floor = { ...floor };
    if (change.name !== undefined) {
      next.name = placeName('name', change.name);
      const other = this.home.findFloor(next.name);
      if (other && other.id !== id) throw new HomeError('name', `there is already a floor ${JSON.stringify(other.floor.name)}`, 'conflict');
    }
    if (change.level === null) delete next.level;
    else if (change.level !== undefined) next.level = floorLevel(change.level);
    if (change.aliases !== undefined) next.aliases = this.floorAliases(change.aliases, id);
    this.home.floors.set(id, next);
    return this.floors().find((f) => f.id === id)!;
  }

  removeFloor(ref: unknown): { removed: string; areas: number } {
    const { id, floor } = this.floor(ref);
    let areas = 0;
    for (const [areaId, a] of this.home.areas.entries())
      if (a.floor === id) {
        areas++;
        const { floor: _drop, ...rest } = a;
        this.home.areas.set(areaId, rest);
      }
    this.home.floors.remove(id);
    return { removed: floor.name, areas };
  }
}

/** A floor's level: a whole number from -200 to 200. */
function floorLevel(level: unknown): number {
  if (!(Number.isInteger(level) && Math.abs(level as number) <= 200))
    throw new HomeError('level', `must be a whole number from -200 to 200, got ${JSON.stringify(level)}`);
  return level as number;
}

export { HomeError };
