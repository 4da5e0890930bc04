// Read devices/*.yaml into the device model. A bad file is reported with its
// path and the field at fault and skipped; the other files still load.
import type { ColorMode } from './color.js';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { createAjv, schemaProblems } from '../util/ajv.js';
import { interner, joined } from '../util/interner.js';
import { sharedParts } from './shared-parts.js';
import { DEFAULT_PAYLOADS, DEFAULT_RANGES, DEFAULT_STATES } from './defaults.js';
import { deviceFileSchema } from './file-schema.js';
import { parseJsonPath } from './json-path.js';
import {
  type AttributeSource,
  type Availability,
  type AvailabilitySource,
  type Device,
  type Entity,
  type EntityKind,
  FRAME_KINDS,
  type Range,
} from './model.js';

export interface DeviceFileProblem {
  file: string;
  /** Dotted path inside the file (`devices[0].entities.lamp.kind`). */
  path: string;
  message: string;
}

export interface LoadResult {
  devices: Device[];
  files: string[];
  problems: DeviceFileProblem[];
}

const validate = createAjv({ useDefaults: true }).compile(deviceFileSchema);

/** The *.yaml / *.yml files a list of files and folders names (folders are not descended). */
export function listDeviceFiles(paths: string[]): { files: string[]; problems: DeviceFileProblem[] } {
  const files: string[] = [];
  const problems: DeviceFileProblem[] = [];
  for (const p of paths) {
    let st: ReturnType<typeof statSync>;
    try {
      st = statSync(p);
    } catch {
      problems.push({ file: p, path: '(file)', message: 'does not exist' });
      continue;
    }
    if (st.isDirectory()) {
      for (const name of readdirSync(p).sort()) {
        if (['.yaml', '.yml'].includes(extname(name)) && statSync(join(p, name)).isFile()) files.push(join(p, name));
      }
    } else files.push(p);
  }
  return { files, problems };
}

export function loadDeviceFiles(paths: string[]): LoadResult {
  const { files, problems } = listDeviceFiles(paths);
  const devices: Device[] = [];
  const seen = new Map<string, string>();
  for (const file of files) {
    const result = parseDeviceFile(file, readFileSync(file, 'utf8'));
    if ('problems' in result) {
      problems.push(...result.problems);
      continue;
    }
    const dup = result.devices.find((d) => seen.has(d.id));
    if (dup) {
      problems.push({ file, path: 'devices', message: `device id "${dup.id}" is already declared in ${seen.get(dup.id)}` });
      continue;
    }
    for (const d of result.devices) {
      seen.set(d.id, file);
      devices.push(d);
    }
  }
  return { devices, files, problems };
}

type Raw = Record<string, any>;

const NO_ALIASES: string[] = Object.freeze([]) as unknown as string[];
/** Equal small parts of entities, one frozen copy each, for every file loaded (device files are the owner's). */
const shared = sharedParts(10_000);

/** Files below this size are parsed whole. */
const CHUNK_ABOVE = 64 * 1024;

/**
 * A big device file, parsed one device at a time. One YAML document of
 * 10,000 entities peaks at ~100 MiB of parser nodes, and the process keeps
 * ~80 MiB of that resident after the parse; device by device the peak is one
 * device's. Only for the plain shape (comments, then `devices:` and its list
 * items, nothing else at the top level); anything else, and any item that does
 * not parse alone (an alias to another item's anchor), returns undefined and
 * the whole file is parsed, which also reports what is wrong with it.
 */
export function parseDevicesInChunks(text: string): { devices: unknown[] } | undefined {
  if (text.length < CHUNK_ABOVE) return undefined;
  const lines = text.split(/\r?\n/);
  let i = 0;
  while (i < lines.length && /^\s*(#.*)?$/.test(lines[i]!)) i++;
  if (!/^devices:[ \t]*(#.*)?$/.test(lines[i] ?? '')) return undefined;
  i++;
  while (i < lines.length && /^\s*(#.*)?$/.test(lines[i]!)) i++;
  const item = /^([ ]*)- /.exec(lines[i] ?? '');
  if (!item) return undefined;
  const indent = item[1]!;
  const start = new RegExp(`^${indent}- `);
  const chunks: string[][] = [];
  for (; i < lines.length; i++) {
    const line = lines[i]!;
    // Blank lines, and comments left of the items, carry nothing (a comment-like line further in may be a block scalar's text: kept).
    if (/^\s*$/.test(line) || (/^\s*#/.test(line) && !line.startsWith(indent))) {
      chunks.at(-1)?.push('');
      continue;
    }
    // Anything less indented than the items (another top-level key, a document marker): not the plain shape.
    if (!line.startsWith(indent) || line.startsWith('---') || line.startsWith('...')) return undefined;
    if (start.test(line)) chunks.push([]);
    chunks.at(-1)!.push(line.slice(indent.length));
  }
  const devices: unknown[] = [];
  for (const chunk of chunks) {
    let one: unknown;
    try {
      one = parseYaml(chunk.join('\n'));
    } catch {
      return undefined;
    }
    if (!Array.isArray(one) || one.length !== 1) return undefined;
    // The parser's strings are slices of the chunk's text and would keep all of it alive: copy them out.
    devices.push(structuredClone(one[0]));
  }
  return { devices };
}

/** Parse and validate one file's text. */
export function parseDeviceFile(file: string, text: string): { devices: Device[] } | { problems: DeviceFileProblem[] } {
  let doc: unknown;
  try {
    doc = parseDevicesInChunks(text) ?? parseYaml(text);
  } catch (err) {
    return { problems: [{ file, path: '(file)', message: `not valid YAML: ${(err as Error).message.split('\n')[0]}` }] };
  }
  if (!validate(doc)) {
    return { problems: schemaProblems(validate.errors, doc).map((p) => ({ file, ...p })) };
  }
  const problems: DeviceFileProblem[] = [];
  const same = interner();
  const devices = (doc as Raw).devices.map((raw: Raw, i: number) => toDevice(raw, file, `devices[${i}]`, problems, same));
  return problems.length ? { problems } : { devices };
}

function toAvailability(raw: unknown): Availability | undefined {
  if (raw === undefined) return undefined;
  const source = (s: unknown): AvailabilitySource =>
    typeof s === 'string'
      ? { topic: s, payloadAvailable: 'online', payloadNotAvailable: 'offline' }
      : {
          topic: (s as Raw).topic,
          path: (s as Raw).path,
          payloadAvailable: (s as Raw).payload_available ?? 'online',
          payloadNotAvailable: (s as Raw).payload_not_available ?? 'offline',
        };
  if (typeof raw === 'string' || !('sources' in (raw as Raw))) return { sources: [source(raw)], mode: 'latest' };
  return { sources: (raw as Raw).sources.map(source), mode: (raw as Raw).mode ?? 'all' };
}

const asStrings = (m: Record<string, unknown> | undefined) => Object.fromEntries(Object.entries(m ?? {}).map(([k, v]) => [k, String(v)]));

function toDevice(raw: Raw, file: string, where: string, problems: DeviceFileProblem[], same: ReturnType<typeof interner>): Device {
  const device: Device = {
    id: raw.id,
    name: raw.name ?? raw.id,
    area: raw.area,
    floor: raw.floor,
    manufacturer: raw.manufacturer,
    model: raw.model,
    source: file,
    availability: toAvailability(raw.availability),
    entities: [],
  };
  for (const [key, e] of Object.entries(raw.entities as Record<string, Raw>)) {
    const at = `${where}.entities.${key}`;
    const kind = e.kind as EntityKind;
    const ranges: Record<string, Range> = { ...DEFAULT_RANGES[kind], ...(e.ranges ?? {}) };
    if (e.min !== undefined || e.max !== undefined) {
      const base = ranges.value ?? { min: 0, max: 100 };
      ranges.value = { min: e.min ?? base.min, max: e.max ?? base.max, step: e.step ?? base.step };
    }
    for (const [name, r] of Object.entries(ranges)) {
      if (r.min >= r.max) problems.push({ file, path: `${at}.ranges.${name}`, message: `min ${r.min} must be below max ${r.max}` });
    }
    const options: Record<string, string[]> = Array.isArray(e.options) ? { value: e.options } : { ...(e.options ?? {}) };
    const attributes: Record<string, AttributeSource> = {};
    for (const [name, src] of Object.entries((e.attributes ?? {}) as Record<string, string | AttributeSource>)) {
      attributes[name] = typeof src === 'string' ? { path: src } : src;
    }
    for (const [name, p] of [['value_path', e.value_path], ...Object.entries(attributes).map(([n, a]) => [`attributes.${n}`, a.path])]) {
      if (typeof p !== 'string') continue;
      try {
        parseJsonPath(p);
      } catch (err) {
        problems.push({ file, path: `${at}.${name}`, message: (err as Error).message });
      }
    }
    // Colours go in a JSON command, at the paths of the mode's attributes.
    const colorModes = e.color_modes as ColorMode[] | undefined;
    if (colorModes) {
      if (kind !== 'light' || e.command_format !== 'json') {
        problems.push({ file, path: `${at}.color_modes`, message: 'only a light with command_format: json takes colours' });
      }
      const need = { xy: ['color_x', 'color_y'], hs: ['hue', 'saturation'], rgb: ['red', 'green', 'blue'] }[colorModes[0]!];
      const missing = need.filter((n) => !attributes[n]);
      if (missing.length)
        problems.push({
          file,
          path: `${at}.attributes`,
          message: `color_modes ${colorModes[0]} needs attributes ${missing.join(', ')} (where the colour is in the state and the command)`,
        });
    }
    // Colour temperature: kelvin or mireds at the color_temp attribute's path, or on a topic of its own.
    const ct = e.color_temp as { min_kelvin: number; max_kelvin: number; unit?: 'kelvin' | 'mired' } | undefined;
    if (ct) {
      if (kind !== 'light') problems.push({ file, path: `${at}.color_temp`, message: 'only a light takes a colour temperature' });
      if (ct.min_kelvin >= ct.max_kelvin)
        problems.push({ file, path: `${at}.color_temp.min_kelvin`, message: `min_kelvin ${ct.min_kelvin} must be below max_kelvin ${ct.max_kelvin}` });
      const ownTopic = !!(e.command_topics as Record<string, string> | undefined)?.color_temp;
      if (!ownTopic && e.command_format !== 'json') {
        problems.push({ file, path: `${at}.color_temp`, message: 'a colour temperature needs command_format: json or command_topics.color_temp' });
      } else if (!ownTopic && !attributes.color_temp) {
        problems.push({
          file,
          path: `${at}.attributes`,
          message: 'color_temp needs attribute color_temp (where the colour temperature is in the state and the command)',
        });
      }
    }
    // Strings equal across entities are one object (interner.ts); ids and names are flat strings. What few
    // entities have is added only to them (8 bytes a field, on every entity, otherwise).
    const entity: Entity = {
      id: joined(raw.id, '.', key),
      key,
      kind: same(kind),
      name: e.name ?? (Object.keys(raw.entities).length === 1 ? device.name : joined(device.name, ' ', key.replace(/_/g, ' '))),
      aliases: e.aliases ?? NO_ALIASES,
      area: same(e.area ?? raw.area),
      deviceId: raw.id,
      deviceClass: same(e.device_class),
      unit: same(e.unit),
      stateTopic: same(e.state_topic),
      valuePath: same(e.value_path),
      attributes: shared(attributes),
      commandTopic: same(e.command_topic),
      commandFormat: same(e.command_format ?? 'plain'),
      commandTopics: shared(e.command_topics ?? {}),
      payloads: shared({ ...DEFAULT_PAYLOADS[kind], ...asStrings(e.payloads) }),
      states: shared({ ...DEFAULT_STATES[kind], ...asStrings(e.states) }),
      ranges: shared(ranges),
      options: shared(options),
      availability: toAvailability(e.availability) ?? device.availability,
    };
    const floor = same(e.floor ?? raw.floor);
    if (floor !== undefined) entity.floor = floor;
    if (e.icon !== undefined) entity.icon = same(e.icon);
    if (colorModes) entity.colorModes = [...colorModes];
    if (ct) entity.colorTemp = { minKelvin: ct.min_kelvin, maxKelvin: ct.max_kelvin, unit: ct.unit ?? 'kelvin' };
    if (FRAME_KINDS.has(kind)) entity.imageEncoding = e.image_encoding ?? 'raw';
    if (e.confirm_timeout_ms !== undefined) entity.confirmTimeoutMs = e.confirm_timeout_ms;
    if (e.simulate !== undefined) entity.simulate = e.simulate;
    device.entities.push(entity);
  }
  return device;
}
