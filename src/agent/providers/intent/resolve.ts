// From what the slots captured to the entities meant: by name or alias
// (narrowed by an area when one was said), by kind or measurement in an area,
// by area alone, or - for intents with an obvious target - implicitly.
import type { Entity } from '../../../devices/model.js';
import type { Captures } from './matcher.js';
import type { KindClass } from './sentences.js';
import type { Vocabulary } from './vocabulary.js';

export type Purpose = 'command' | 'read';

/** An answer instead of tool calls. `rank` orders competing readings of one utterance. */
export type Reply =
  | { type: 'not_understood'; unknown?: string; rank: 0 }
  | { type: 'not_found'; what: string; area?: string; rank: 1 }
  | { type: 'unsupported'; entity: Entity; verb: string; rank: 2 }
  | { type: 'ambiguous'; candidates: Entity[]; rank: 3 }
  | { type: 'not_here'; entities: Entity[]; verb: string; rank: 3 }
  | { type: 'out_of_range'; entity: Entity; what: string; min: number; max: number; unit: string; rank: 3 };

export interface Target {
  entities: Entity[];
  /** Said as a plural, or with "all", or as a whole area. */
  plural: boolean;
  /** Named by name or alias. */
  named: boolean;
  /** Only an area was said. */
  areaOnly: boolean;
  /** No target words at all ("make it 22 degrees"). */
  implicit: boolean;
  area?: string;
  kind?: KindClass;
}

const byName = (a: Entity, b: Entity) => a.name.localeCompare(b.name) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

export function sortEntities(list: Entity[]): Entity[] {
  return [...new Set(list)].sort(byName);
}

/** The entities a match points at, before the intent filters them. */
export function resolveTarget(c: Captures, v: Vocabulary, purpose: Purpose): Target | Reply {
  const area = c.area?.value;
  const inArea = (e: Entity) => !area || (e.area ?? '').toLowerCase() === area.toLowerCase();
  const plural = !!c.all || !!c.kind?.plural || !!c.name?.plural || c.kind?.value.id === 'everything';
  if (c.name) {
    const named = c.name.value.map((id) => v.byId.get(id)).filter((e): e is Entity => !!e);
    const entities = sortEntities(named.filter(inArea));
    if (!entities.length) return { type: 'not_found', what: c.name.said, area, rank: 1 };
    return { entities, plural, named: true, areaOnly: false, implicit: false, area, kind: c.kind?.value };
  }
  if (c.kind) {
    const kind = c.kind.value;
    const info = (e: Entity) => v.classEntity.get(e.id);
    let entities = v.entities.filter((e) => inArea(e) && kind.match(info(e)!, purpose));
    if (!entities.length && purpose === 'read' && kind.fallback) entities = v.entities.filter((e) => inArea(e) && kind.fallback!(info(e)!));
    if (!entities.length) return { type: 'not_found', what: c.kind.said, area, rank: 1 };
    return { entities: sortEntities(entities), plural, named: false, areaOnly: false, implicit: false, area, kind };
  }
  if (area) {
    const entities = v.entities.filter(inArea);
    if (!entities.length) return { type: 'not_found', what: 'device', area, rank: 1 };
    return { entities: sortEntities(entities), plural: true, named: false, areaOnly: true, implicit: false, area };
  }
  return { entities: sortEntities(v.entities), plural: !!c.all, named: false, areaOnly: false, implicit: true };
}

export function isReply(x: unknown): x is Reply {
  return typeof x === 'object' && x !== null && 'rank' in x;
}
