// Areas: a name, aliases ("lounge" for the Living room) and the floor it is on (a floor's id), as Home
// Assistant's area registry has them.
import type { Db } from '../../db/database.js';
import { MAX_ALIASES, MAX_PLACE_NAME } from './place-names.js';
import { RecordStore } from './record-store.js';

export interface Area {
  name: string;
  aliases: string[];
  /** The id of the floor it is on. */
  floor?: string;
}

function readArea(raw: unknown): Area | undefined {
  const r = raw as Partial<Area> | null;
  if (!r || typeof r.name !== 'string' || !r.name || r.name.length > MAX_PLACE_NAME) return undefined;
  const aliases = Array.isArray(r.aliases) ? r.aliases.filter((a): a is string => typeof a === 'string').slice(0, MAX_ALIASES) : [];
  return { name: r.name, aliases, ...(typeof r.floor === 'string' && r.floor ? { floor: r.floor } : {}) };
}

export function areaStore(db: Db | undefined): RecordStore<Area> {
  return new RecordStore<Area>(db, 'home_areas', readArea);
}
