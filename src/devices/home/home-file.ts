// The home as a file, for people who keep their home in git (`hearth home export` / `import`): floors, areas,
// and per device what a person chose, in the shape of a device file (a `devices:` list with `id`, `name`,
// `area`, `aliases` and `entities` by key). A device is matched by its `identity` (its source and its own id),
// else by its `id`. Importing keeps everything: a device Hearth does not see now is stored all the same (its
// choices apply when it comes back) and reported as unknown; a bad entry is reported with where it is, and the
// rest goes in.
import { parse, stringify } from 'yaml';
import type { DeviceChoice } from './device-choices.js';
import type { EntityChoice } from './entity-choices.js';
import type { HomeModel } from './home-model.js';
import { aliasList, HomeError, placeId, placeName } from './place-names.js';
import type { Device } from '../model.js';

/** Largest home file read. */
export const MAX_HOME_FILE = 4 * 1024 * 1024;
/** Most devices in one home file. */
export const MAX_HOME_DEVICES = 20_000;

export interface ImportReport {
  floors: number;
  areas: number;
  devices: number;
  /** Devices in the file that Hearth does not see now: stored, applied when they appear. */
  unknown: string[];
  /** Entries that could not be used, with where they are in the file. */
  problems: Array<{ path: string; message: string }>;
}

interface FileDevice {
  id?: string;
  identity: string;
  name?: string;
  area?: string | null;
  aliases?: string[];
  exposed?: boolean;
  entities?: Record<string, { area?: string | null; exposed?: boolean }>;
}

/** The home's stored choices as a YAML document. `devices`: the devices now, to name each entry's id and source name. */
export function exportHome(home: HomeModel, devices: Device[]): string {
  const byIdentity = new Map(devices.map((d) => [d.identity ?? d.id, d]));
  const floorName = (id: string | undefined) => (id ? home.floors.get(id)?.name : undefined);
  const areaName = (id: string | null | undefined) => (id === null ? null : id ? home.areas.get(id)?.name : undefined);
  const entries = new Map<string, FileDevice>();
  const entry = (identity: string): FileDevice => {
    let e = entries.get(identity);
    if (!e) {
      const d = byIdentity.get(identity);
      e = { ...(d ? { id: d.id } : {}), identity };
      entries.set(identity, e);
    }
    return e;
  };
  for (const [identity, c] of home.devices.entries()) {
    const e = entry(identity);
    if (c.name) e.name = c.name;
    const area = areaName(c.area);
    if (area !== undefined) e.area = area;
    if (c.aliases?.length) e.aliases = [...c.aliases];
    if (c.exposed !== undefined) e.exposed = c.exposed;
  }
  for (const [key, c] of home.entities.entries()) {
    const hash = key.lastIndexOf('#');
    if (hash < 0) continue;
    const e = entry(key.slice(0, hash));
    const out: { area?: string | null; exposed?: boolean } = {};
    const area = areaName(c.area);
    if (area !== undefined) out.area = area;
    if (c.exposed !== undefined) out.exposed = c.exposed;
    (e.entities ??= {})[key.slice(hash + 1)] = out;
  }
  const doc = {
    floors: home.floors
      .all()
      .map((f) => ({ name: f.name, ...(f.level !== undefined ? { level: f.level } : {}), ...(f.aliases.length ? { aliases: f.aliases } : {}) })),
    areas: home.areas.all().map((a) => ({
      name: a.name,
      ...(a.floor && floorName(a.floor) ? { floor: floorName(a.floor) } : {}),
      ...(a.aliases.length ? { aliases: a.aliases } : {}),
    })),
    devices: [...entries.values()].sort((a, b) => a.identity.localeCompare(b.identity)),
  };
  return `# Hearth home: floors, areas and what people chose per device (hearth home export).\n${stringify(doc)}`;
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** Read a home file into the stores (one change for consumers); nothing in it is dropped silently. */
export function importHome(home: HomeModel, devices: Device[], text: string): ImportReport {
  return home.batch(() => importInto(home, devices, text));
}

function importInto(home: HomeModel, devices: Device[], text: string): ImportReport {
  if (text.length > MAX_HOME_FILE) throw new HomeError('file', `is ${text.length} characters; a home file is at most ${MAX_HOME_FILE}`);
  let doc: unknown;
  try {
    doc = parse(text, { maxAliasCount: 100 });
  } catch (err) {
    throw new HomeError('file', `is not YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  if (!isObject(doc)) throw new HomeError('file', 'must be a YAML mapping with floors, areas and devices');
  const report: ImportReport = { floors: 0, areas: 0, devices: 0, unknown: [], problems: [] };
  const problem = (path: string, err: unknown) => report.problems.push({ path, message: err instanceof HomeError ? err.message : String(err) });
  const list = (key: string): unknown[] => {
    const v = doc[key];
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v)) {
      problem(key, new HomeError(key, 'must be a list'));
      return [];
    }
    return v;
  };
  for (const [i, raw] of list('floors').entries()) {
    try {
      if (!isObject(raw)) throw new HomeError('floor', 'must be a mapping with a name');
      const name = placeName('name', raw.name);
      const found = home.findFloor(name);
      const id = found?.id ?? placeId(name);
      const level = raw.level;
      if (level !== undefined && !(Number.isInteger(level) && Math.abs(level as number) <= 200)) throw new HomeError('level', 'must be a whole number');
      home.floors.set(id, {
        name,
        aliases: raw.aliases !== undefined ? aliasList('aliases', raw.aliases) : [],
        ...(level !== undefined ? { level: level as number } : {}),
      });
      report.floors++;
    } catch (err) {
      problem(`floors[${i}]`, err);
    }
  }
  const areaId = (name: unknown, path: string): string | null => {
    if (name === null) return null;
    const clean = placeName(path, name);
    const found = home.findArea(clean);
    if (found) return found.id;
    const id = placeId(clean);
    home.areas.set(id, { name: clean, aliases: [] });
    return id;
  };
  for (const [i, raw] of list('areas').entries()) {
    try {
      if (!isObject(raw)) throw new HomeError('area', 'must be a mapping with a name');
      const name = placeName('name', raw.name);
      const id = home.findArea(name)?.id ?? placeId(name);
      let floor: string | undefined;
      if (raw.floor !== undefined && raw.floor !== null) {
        const f = home.findFloor(placeName('floor', raw.floor));
        if (!f) throw new HomeError('floor', `${JSON.stringify(raw.floor)} is not a floor of this file or of the home`);
        floor = f.id;
      }
      home.areas.set(id, { name, aliases: raw.aliases !== undefined ? aliasList('aliases', raw.aliases) : [], ...(floor ? { floor } : {}) });
      report.areas++;
    } catch (err) {
      problem(`areas[${i}]`, err);
    }
  }
  const byIdentity = new Map(devices.map((d) => [d.identity ?? d.id, d]));
  const byId = new Map(devices.map((d) => [d.id, d]));
  const entries = list('devices');
  if (entries.length > MAX_HOME_DEVICES) throw new HomeError('devices', `has ${entries.length} entries; at most ${MAX_HOME_DEVICES}`);
  for (const [i, raw] of entries.entries()) {
    const path = `devices[${i}]`;
    try {
      if (!isObject(raw)) throw new HomeError('device', 'must be a mapping with an identity or an id');
      const known =
        (typeof raw.identity === 'string' ? byIdentity.get(raw.identity) : undefined) ?? (typeof raw.id === 'string' ? byId.get(raw.id) : undefined);
      const identity = typeof raw.identity === 'string' && raw.identity ? raw.identity.slice(0, 300) : known ? (known.identity ?? known.id) : undefined;
      if (!identity) throw new HomeError('identity', `${JSON.stringify(raw.id ?? null)} is no device Hearth sees, and the entry has no identity to keep it by`);
      if (!known) report.unknown.push(identity);
      const choice: DeviceChoice = {};
      if (raw.name !== undefined) choice.name = placeName('name', raw.name);
      if (raw.area !== undefined) choice.area = areaId(raw.area, 'area');
      if (raw.aliases !== undefined) choice.aliases = aliasList('aliases', raw.aliases);
      if (raw.exposed !== undefined) {
        if (typeof raw.exposed !== 'boolean') throw new HomeError('exposed', 'must be true or false');
        choice.exposed = raw.exposed;
      }
      const ents = raw.entities;
      if (ents !== undefined && !isObject(ents)) throw new HomeError('entities', 'must be a mapping of entity keys');
      const entityChoices: Array<[string, EntityChoice]> = [];
      for (const [key, v] of Object.entries(ents ?? {})) {
        if (!isObject(v)) throw new HomeError(`entities.${key}`, 'must be a mapping (area, exposed)');
        const ec: EntityChoice = {};
        if (v.area !== undefined) ec.area = areaId(v.area, `entities.${key}.area`);
        if (v.exposed !== undefined) {
          if (typeof v.exposed !== 'boolean') throw new HomeError(`entities.${key}.exposed`, 'must be true or false');
          ec.exposed = v.exposed;
        }
        entityChoices.push([`${identity}#${key.slice(0, 64)}`, ec]);
      }
      if (Object.keys(choice).length) home.devices.set(identity, choice);
      for (const [key, ec] of entityChoices) if (Object.keys(ec).length) home.entities.set(key, ec);
      report.devices++;
    } catch (err) {
      problem(path, err);
    }
  }
  return report;
}
