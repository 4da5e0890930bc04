// What a person chose for one entity, keyed by `<device identity>#<entity key>`: an area other than its
// device's (a plug's power reading placed with the lamp it feeds), and whether agents are shown it.
import type { Db } from '../../db/database.js';
import { RecordStore } from './record-store.js';

export interface EntityChoice {
  area?: string | null;
  exposed?: boolean;
}

function readEntityChoice(raw: unknown): EntityChoice | undefined {
  const r = raw as EntityChoice | null;
  if (!r || typeof r !== 'object') return undefined;
  const out: EntityChoice = {};
  if (r.area === null || (typeof r.area === 'string' && r.area)) out.area = r.area;
  if (typeof r.exposed === 'boolean') out.exposed = r.exposed;
  return out;
}

export function entityChoiceStore(db: Db | undefined): RecordStore<EntityChoice> {
  return new RecordStore<EntityChoice>(db, 'home_entities', readEntityChoice);
}
