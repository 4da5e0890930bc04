// Floors: a name, aliases ("upstairs"), and a level to order them by. An area is on at most one floor.
import type { Db } from '../../db/database.js';
import { MAX_ALIASES, MAX_PLACE_NAME } from './place-names.js';
import { RecordStore } from './record-store.js';

export interface Floor {
  name: string;
  aliases: string[];
  /** 0 the ground floor, 1 the first, -1 the cellar; for ordering. */
  level?: number;
}

function readFloor(raw: unknown): Floor | undefined {
  const r = raw as Partial<Floor> | null;
  if (!r || typeof r.name !== 'string' || !r.name || r.name.length > MAX_PLACE_NAME) return undefined;
  const aliases = Array.isArray(r.aliases) ? r.aliases.filter((a): a is string => typeof a === 'string').slice(0, MAX_ALIASES) : [];
  return { name: r.name, aliases, ...(Number.isInteger(r.level) ? { level: r.level } : {}) };
}

export function floorStore(db: Db | undefined): RecordStore<Floor> {
  return new RecordStore<Floor>(db, 'home_floors', readFloor);
}
