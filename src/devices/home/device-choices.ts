// What a person chose for one device, keyed by the device's identity at its source (`zigbee2mqtt:<IEEE
// address>`), so it holds across renames and restarts: its area (an area's id, or null for "no area" even where
// the source suggests one), the name it is said by, its aliases, and whether agents are shown its entities.
// A field left out falls back to the source.
import type { Db } from '../../db/database.js';
import { MAX_ALIASES, MAX_PLACE_NAME } from './place-names.js';
import { RecordStore } from './record-store.js';

export interface DeviceChoice {
  area?: string | null;
  name?: string;
  aliases?: string[];
  exposed?: boolean;
}

function readDeviceChoice(raw: unknown): DeviceChoice | undefined {
  const r = raw as DeviceChoice | null;
  if (!r || typeof r !== 'object') return undefined;
  const out: DeviceChoice = {};
  if (r.area === null || (typeof r.area === 'string' && r.area)) out.area = r.area;
  if (typeof r.name === 'string' && r.name && r.name.length <= MAX_PLACE_NAME) out.name = r.name;
  if (Array.isArray(r.aliases)) out.aliases = r.aliases.filter((a): a is string => typeof a === 'string').slice(0, MAX_ALIASES);
  if (typeof r.exposed === 'boolean') out.exposed = r.exposed;
  return out;
}

export function deviceChoiceStore(db: Db | undefined): RecordStore<DeviceChoice> {
  return new RecordStore<DeviceChoice>(db, 'home_devices', readDeviceChoice);
}
