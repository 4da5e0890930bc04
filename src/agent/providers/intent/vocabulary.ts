// Slot lists filled from the home: entity names and aliases, areas, kind words,
// climate modes. Rebuilt only when the entities change (names, aliases, areas,
// kinds), so matching stays a few map look-ups per word.
import { COLOR_NAMES } from '../../../devices/color.js';
import type { Entity } from '../../../devices/model.js';
import { phraseKeys, type Token } from './normalize.js';
import { ALL_WORDS, FEEL_WORDS, HINT_WORDS, KIND_CLASSES, MODE_SYNONYMS, STATE_WORDS, type ClassEntity, type KindClass } from './sentences.js';

/** Longer names are reachable by area and kind, not by saying them. */
const MAX_PHRASE_WORDS = 10;

export interface PhraseHit<T> {
  end: number;
  value: T;
  /** The phrase's last word was said as a plural. */
  plural: boolean;
  /** The words as said (normalised), for messages. */
  said: string;
}

/** Phrases by their first word; a phrase maps to one value (values merged by the caller). */
export class PhraseIndex<T> {
  private byFirst = new Map<string, Array<{ keys: string[]; value: T }>>();

  constructor(private readonly merge?: (a: T, b: T) => T) {}

  add(text: string, value: T, joinedVariant = false): void {
    const keys = phraseKeys(text);
    if (!keys.length || keys.length > MAX_PHRASE_WORDS) return;
    this.put(keys, value);
    // "livingroom" for "living room".
    if (joinedVariant && keys.length > 1 && keys.every((k) => /^[a-z]+$/.test(k))) this.put([keys.join('')], value);
  }

  private put(keys: string[], value: T): void {
    let list = this.byFirst.get(keys[0]);
    if (!list) this.byFirst.set(keys[0], (list = []));
    const same = list.find((p) => p.keys.length === keys.length && p.keys.every((k, i) => k === keys[i]));
    if (same) {
      if (this.merge) same.value = this.merge(same.value, value);
      return;
    }
    list.push({ keys, value });
  }

  match(tokens: Token[], pos: number): PhraseHit<T>[] {
    const list = pos < tokens.length ? this.byFirst.get(tokens[pos].w) : undefined;
    if (!list) return [];
    const out: PhraseHit<T>[] = [];
    for (const p of list) {
      if (pos + p.keys.length > tokens.length) continue;
      let ok = true;
      for (let i = 1; i < p.keys.length; i++) {
        if (tokens[pos + i].w !== p.keys[i]) {
          ok = false;
          break;
        }
      }
      if (ok) {
        const end = pos + p.keys.length;
        out.push({ end, value: p.value, plural: tokens[end - 1].plural, said: p.keys.join(' ') });
      }
    }
    return out;
  }
}

export interface Vocabulary {
  entities: Entity[];
  byId: Map<string, Entity>;
  classEntity: Map<string, ClassEntity>;
  names: PhraseIndex<string[]>;
  areas: PhraseIndex<string>;
  kinds: PhraseIndex<KindClass>;
  feel: PhraseIndex<KindClass>;
  presence: PhraseIndex<KindClass>;
  all: PhraseIndex<true>;
  modes: PhraseIndex<string>;
  states: PhraseIndex<string>;
  hints: PhraseIndex<string>;
  colors: PhraseIndex<string>;
  /** Every area, as the registry spells it. */
  areaNames: string[];
}

const unionIds = (a: string[], b: string[]) => [...new Set([...a, ...b])];

function classEntity(e: Entity): ClassEntity {
  const words = new Set<string>();
  for (const text of [e.name, ...e.aliases]) for (const k of phraseKeys(text)) words.add(k);
  return { kind: e.kind, deviceClass: e.deviceClass, words };
}

export function buildVocabulary(entities: Entity[]): Vocabulary {
  const names = new PhraseIndex<string[]>(unionIds);
  const areas = new PhraseIndex<string>((a) => a);
  const byId = new Map<string, Entity>();
  const classes = new Map<string, ClassEntity>();
  const modeOptions = new Set<string>();
  const areaNames = new Set<string>();
  for (const e of entities) {
    byId.set(e.id, e);
    classes.set(e.id, classEntity(e));
    names.add(e.name, [e.id], true);
    for (const alias of e.aliases) names.add(alias, [e.id], true);
    if (e.area) {
      areas.add(e.area, e.area, true);
      areaNames.add(e.area);
    }
    if (e.kind === 'climate') for (const m of e.options.mode ?? []) modeOptions.add(m);
  }

  const kinds = new PhraseIndex<KindClass>((a) => a);
  for (const c of KIND_CLASSES) for (const w of c.words) kinds.add(w, c);
  // Any device class the home uses is a word too ("smoke", "moisture").
  const known = new Set(KIND_CLASSES.map((c) => c.id));
  for (const e of entities) {
    const d = e.deviceClass;
    if (!d || known.has(d) || !/^[a-z_]{2,30}$/.test(d)) continue;
    known.add(d);
    kinds.add(d.replace(/_/g, ' '), {
      id: d,
      words: [d],
      match: (x) => (x.kind === 'sensor' || x.kind === 'binary_sensor' || x.kind === 'cover') && x.deviceClass === d,
    });
  }

  const classById = new Map(KIND_CLASSES.map((c) => [c.id, c]));
  const feel = new PhraseIndex<KindClass>((a) => a);
  for (const [w, id] of Object.entries(FEEL_WORDS)) feel.add(w, classById.get(id)!);
  const presence = new PhraseIndex<KindClass>((a) => a);
  for (const w of ['anyone', 'anybody', 'someone', 'somebody', 'people', 'person', 'anything moving', 'movement', 'motion']) presence.add(w, classById.get('motion')!);

  const all = new PhraseIndex<true>();
  for (const w of ALL_WORDS) all.add(w, true);

  const modes = new PhraseIndex<string>((a) => a);
  for (const m of modeOptions) modes.add(m.replace(/_/g, ' '), m);
  for (const [w, m] of Object.entries(MODE_SYNONYMS)) if (modeOptions.has(m)) modes.add(w, m);

  const states = new PhraseIndex<string>((a) => a);
  for (const [w, s] of Object.entries(STATE_WORDS)) states.add(w, s);

  const hints = new PhraseIndex<string>((a) => a);
  for (const w of HINT_WORDS) hints.add(w, w);

  const colors = new PhraseIndex<string>((a) => a);
  for (const name of Object.keys(COLOR_NAMES)) colors.add(name, name);

  return { entities, byId, classEntity: classes, names, areas, kinds, feel, presence, all, modes, states, hints, colors, areaNames: [...areaNames] };
}

/** What decides whether the vocabulary must be rebuilt. */
export function vocabularySignature(entities: Entity[]): string {
  let s = '';
  for (const e of entities) {
    s += `${e.id}\u0001${e.kind}\u0001${e.name}\u0001${e.aliases.join('\u0002')}\u0001${e.area ?? ''}\u0001${e.deviceClass ?? ''}\u0001${(e.options.mode ?? []).join(',')}\u0000`;
  }
  return s;
}
