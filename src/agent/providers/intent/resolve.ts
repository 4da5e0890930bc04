// From what the slots captured to the entities meant: by name or alias
// (narrowed by an area or floor when one was said), by kind or measurement in
// an area, floor or the whole home, by area alone, or - for intents with an
// obvious target - implicitly. "Here" is the speaker's area.
import type { Entity } from '../../../devices/model.js';
import type { Captures, MatchContext } from './matcher.js';
import type { KindClass } from './sentences.js';
import type { Vocabulary } from './vocabulary.js';

export type Purpose = 'command' | 'read';

/** An answer instead of tool calls. `rank` orders competing readings of one utterance. */
export type Reply =
  | { type: 'not_understood'; unknown?: string; closest?: Entity[]; rank: 0 }
  /** `what`: the words said; or `noun`, a key of the language's `noun_*` responses (filled with `what` as {kind} and `state`). */
  | {
      type: 'not_found';
      what: string;
      noun?: string;
      /** The kind looked for, when a kind word was said: its `noun_<kind>` names it where the word said would not. */
      kind?: string;
      state?: string;
      area?: string;
      /** The floor looked on, when no area was said ("upstairs"). */
      floor?: string;
      closest?: Entity[];
      named?: boolean;
      rank: 1;
    }
  /** `verb` and `why` are keys of the language's `verb_*` and `why_*` responses; `value` fills a verb's {value}. */
  | { type: 'unsupported'; entity: Entity; verb: string; value?: string; why?: string; rank: 1 | 2 }
  | { type: 'ambiguous'; candidates: Entity[]; rank: 3 }
  | { type: 'which_area'; rank: 3 }
  /** "turn it off" with nothing said before it. */
  | { type: 'which_device'; rank: 1 }
  | { type: 'not_here'; entities: Entity[]; verb: string; rank: 3 }
  /** More than one sentence changes at once: nothing is done. */
  | { type: 'too_many'; count: number; rank: 3 }
  /** `what`: a key of the language's `quantity_*` responses. */
  | { type: 'out_of_range'; entity: Entity; what: string; min: number; max: number; unit: string; rank: 3 }
  | { type: 'question'; rank: 3 }
  /** Something Hearth does not do ("what's the weather like?"): `topic` picks the `out_of_scope_<topic>` response. */
  | { type: 'out_of_scope'; topic: string; rank: 3 }
  /** Refused plainly, in the response `key` ("only someone allowed to read the audit can ask that"). */
  | { type: 'refused'; key: string; rank: 3 };

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
  /** A floor said ("upstairs"). */
  floor?: string;
  kind?: KindClass;
  /** "it", "them": what the session's last sentence was about. */
  reference?: boolean;
  /** Each name said, with what it found (several names: each must be one device). */
  perName?: Array<{ found: Entity[]; plural: boolean }>;
}

const byName = (a: Entity, b: Entity) => a.name.localeCompare(b.name) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

export function sortEntities(list: Entity[]): Entity[] {
  return [...new Set(list)].sort(byName);
}

/** The area meant: said, or "here" (the speaker's area). */
export function areaOf(c: Captures, context: MatchContext): string | undefined | Reply {
  if (c.area) return c.area.value;
  if (c.here) return context.area ?? { type: 'which_area', rank: 3 };
  return undefined;
}

/** The entities a match points at, before the intent filters them. */
export function resolveTarget(c: Captures, v: Vocabulary, purpose: Purpose, context: MatchContext = {}): Target | Reply {
  const where = areaOf(c, context);
  if (isReply(where)) return where;
  const area = where;
  const floor = c.floor?.value;
  // "the kitchen and living room lights": a second area.
  const areas = [area, typeof c.other.area2 === 'string' ? c.other.area2 : undefined].filter((a): a is string => !!a).map((a) => a.toLowerCase());
  // "the first and second floor": a second floor.
  const floors = [floor, typeof c.other.floor2 === 'string' ? c.other.floor2 : undefined].filter((f): f is string => !!f).map((f) => f.toLowerCase());
  const inArea = (e: Entity) =>
    (!areas.length || areas.includes((e.area ?? '').toLowerCase())) &&
    (!floors.length || floors.includes((e.floor ?? (e.area ? v.floorOf.get(e.area.toLowerCase()) : undefined))?.toLowerCase() ?? ''));
  const whole = c.other.whole !== undefined;
  // "it", "them": what the session's last sentence acted on or read.
  if (c.reference) {
    const before = context.previous?.entities;
    if (!before?.length) return { type: 'which_device', rank: 1 };
    // "how warm is it" after "turn on the lamp": "it" is the weather's, not the lamp (a kind said must fit).
    const kind = c.kind && c.kind.value.id !== 'everything' ? c.kind.value : undefined;
    const fits = (e: Entity) => !kind || kind.match(v.classEntity.get(e.id)!, purpose) || (purpose === 'read' && !!kind.fallback?.(v.classEntity.get(e.id)!));
    const found = sortEntities(before.filter((e) => v.classEntity.has(e.id) && fits(e)));
    if (!found.length) return { type: 'which_device', rank: 1 };
    return { entities: found, plural: found.length > 1, named: true, reference: true, areaOnly: false, implicit: false };
  }
  const plural =
    !!c.all ||
    whole ||
    areas.length > 1 ||
    !!floor ||
    !!c.kind?.plural ||
    c.names.some((n) => n.plural) ||
    c.names.length > 1 ||
    c.kind?.value.id === 'everything';
  // Where it looked, for "I could not find ...": the area said, else the floor.
  const label = area ? { area } : floor ? { floor } : {};
  const at = { area, floor };
  if (c.names.length) {
    const perName: Array<{ found: Entity[]; plural: boolean }> = [];
    // Several names and a kind word right after one that is not the last ("the ceiling fan and the bedroom
    // lamp"): the kind is that name's. After the last ("the desk and floor lamps"), it is every name's.
    const kindStart = c.kind ? c.kind.end - c.kind.said.split(' ').length : -1;
    const last = c.names.reduce((a, n) => Math.max(a, n.end), -1);
    const kindOf = c.names.length > 1 && kindStart !== last ? c.names.find((n) => n.end === kindStart) : undefined;
    for (const n of c.names) {
      const named = n.value.map((id) => v.byId.get(id)).filter((e): e is Entity => !!e);
      let found = sortEntities(named.filter(inArea));
      // "the kitchen sensor's battery": the named ones of that kind, else the entity of that kind on the named device.
      if (c.kind && (!kindOf || kindOf === n) && found.length && c.kind.value.id !== 'everything') {
        const fits = (e: Entity) => c.kind!.value.match(v.classEntity.get(e.id)!, purpose);
        const devices = new Set(found.map((e) => e.deviceId));
        let narrowed = found.filter(fits);
        // "how hot is the office thermostat": a measurement of the named device itself (its reading).
        if (!narrowed.length && purpose === 'read' && c.kind.value.fallback) narrowed = found.filter((e) => c.kind!.value.fallback!(v.classEntity.get(e.id)!));
        const same = narrowed.length ? narrowed : v.entities.filter((e) => devices.has(e.deviceId) && fits(e));
        // "the desk fan" is not the desk lamp.
        // Said as one name ("desk fan"): a device this home does not have, with the closest it does.
        // One of several names the last one's kind does not fit ("the hallway light and the ceiling fan"): its own.
        const ownKind = !same.length && c.names.length > 1 && n.end !== kindStart;
        if (!same.length && !ownKind) return { type: 'not_understood', unknown: `${n.said} ${c.kind.said}`, rank: 0 };
        if (!ownKind) found = sortEntities(same);
      }
      if (!found.length) return { type: 'not_found', what: n.said, ...label, named: true, rank: 1 };
      perName.push({ found, plural: n.plural || !!c.all });
    }
    return {
      entities: sortEntities(perName.flatMap((p) => p.found)),
      plural,
      named: true,
      areaOnly: false,
      implicit: false,
      ...at,
      kind: c.kind?.value,
      perName,
    };
  }
  if (c.kind) {
    const kind = c.kind.value;
    const info = (e: Entity) => v.classEntity.get(e.id)!;
    let entities = v.entities.filter((e) => inArea(e) && kind.match(info(e), purpose));
    if (!entities.length && purpose === 'read' && kind.fallback) entities = v.entities.filter((e) => inArea(e) && kind.fallback!(info(e)));
    // A device that is one of these itself (a valve's thermostat) is meant by it, not the switches its name makes
    // sound like one ("Radiator Away mode", "Radiator Child lock" on the same valve).
    if (kind.id !== 'switch' && kind.id !== 'everything') {
      const itself = new Set(entities.filter((e) => e.kind !== 'switch').map((e) => e.deviceId));
      if (itself.size) entities = entities.filter((e) => e.kind !== 'switch' || !itself.has(e.deviceId));
    }
    // A sentence from a room, with no other place said, means that room: "fans on" from the kitchen
    // satellite is the kitchen's fans, never every fan in the home.
    const speaker = !area && !floor && !whole && context.area ? context.area : undefined;
    if (speaker) {
      const inSpeaker = (e: Entity) => (e.area ?? '').toLowerCase() === speaker.toLowerCase();
      let here = entities.filter(inSpeaker);
      // "what is the temperature?" from the office: its thermostat, not a sensor elsewhere in the home.
      if (!here.length && purpose === 'read' && kind.fallback) here = v.entities.filter((e) => inSpeaker(e) && kind.fallback!(info(e)));
      if (!here.length) return { type: 'not_found', what: c.kind.said, kind: c.kind.value.id, area: speaker, rank: 1 };
      entities = here;
    }
    if (!entities.length) return { type: 'not_found', what: c.kind.said, kind: c.kind.value.id, ...label, rank: 1 };
    // "the ceiling fan": of the fans, the ones whose names say "ceiling fan" (one was meant).
    const said = c.kind.said.split(' ');
    if (!plural && said.length > 1) {
      const closer = entities.filter((e) => said.every((w) => info(e).words.has(w)));
      if (closer.length) entities = closer;
    }
    return { entities: sortEntities(entities), plural, named: false, areaOnly: false, implicit: false, ...(speaker ? { area: speaker, floor } : at), kind };
  }
  if (area || floor) {
    const entities = v.entities.filter(inArea);
    if (!entities.length) return { type: 'not_found', what: '', noun: 'device', ...label, rank: 1 };
    return { entities: sortEntities(entities), plural: true, named: false, areaOnly: true, implicit: false, ...at };
  }
  return { entities: sortEntities(v.entities), plural: !!c.all || whole, named: false, areaOnly: false, implicit: true };
}

export function isReply(x: unknown): x is Reply {
  return typeof x === 'object' && x !== null && 'rank' in x;
}
