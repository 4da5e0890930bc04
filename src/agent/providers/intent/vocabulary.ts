// Slot lists filled from the home: entity names and aliases, areas, floors,
// climate modes and fan presets (with the language's synonyms for them).
// Rebuilt only when the entities change (names, aliases, areas, kinds), so
// matching stays a few map look-ups per word.
import { isActuator, type Entity } from '../../../devices/model.js';
import type { CompiledLanguage } from './matcher.js';
import { PhraseIndex } from './phrases.js';
import type { ClassEntity } from './sentences.js';

export interface Vocabulary {
  lang: CompiledLanguage;
  entities: Entity[];
  byId: Map<string, Entity>;
  classEntity: Map<string, ClassEntity>;
  names: PhraseIndex<string[]>;
  areas: PhraseIndex<string>;
  /** Floor name -> the areas on it. */
  floors: PhraseIndex<string>;
  modes: PhraseIndex<string>;
  presets: PhraseIndex<string>;
  /** Every area, as the registry spells it. */
  areaNames: string[];
  /** Area (lowercased) -> its floor. */
  floorOf: Map<string, string>;
  /** Words of names and areas: what a typo may be corrected to. */
  nameWords: Set<string>;
  /** Each word of a name or alias -> the entities whose names say it. */
  byWord: Map<string, Entity[]>;
}

const unionIds = (a: string[], b: string[]) => [...new Set([...a, ...b])];

/** Kinds whose two-word names are also said by their last word: devices, not their settings ("Siren Volume"). */
const HEAD_NOUN_KINDS: ReadonlySet<string> = new Set([
  'switch',
  'light',
  'fan',
  'cover',
  'climate',
  'lock',
  'valve',
  'vacuum',
  'lawn_mower',
  'siren',
  'humidifier',
  'water_heater',
]);

/** The floor of an entity's area, when its device file names one. */
export function floorOf(e: Entity): string | undefined {
  return e.floor;
}

/** The home's areas and floors with the other names people gave them (`hearth areas alias`, `hearth floors alias`). */
export interface Places {
  areas: ReadonlyArray<{ name: string; aliases: readonly string[] }>;
  floors: ReadonlyArray<{ name: string; aliases: readonly string[] }>;
}

export function buildVocabulary(entities: Entity[], lang: CompiledLanguage, places?: Places): Vocabulary {
  const keys = (t: string) => lang.normalizer.keys(t);
  const names = new PhraseIndex<string[]>(keys, unionIds);
  const areas = new PhraseIndex<string>(keys, (a) => a);
  const floors = new PhraseIndex<string>(keys, (a) => a);
  const byId = new Map<string, Entity>();
  const classes = new Map<string, ClassEntity>();
  const modeOptions = new Set<string>();
  const presetOptions = new Set<string>();
  const areaNames = new Set<string>();
  const floorByArea = new Map<string, string>();
  const kindWords = lang.list('kind');
  const allWords = lang.list('all');
  const roomWords = lang.list('room');
  // A name that is itself a group phrase ("All the lights", "Lights", "Everything") would capture what people
  // say of a group: it is known only with its kind after it ("All the lights switch").
  // A device's own name that is only a kind word ("Light A": the "a" is an article) is not a name either:
  // "lights on" must not switch it. An alias the owner wrote ("lamp") is their word and stays a name.
  const groupPhrase = (text: string, bareKind = false): boolean => {
    const tokens = lang.normalizer.tokenize(text);
    if (!tokens.length || !kindWords) return false;
    const afterAll = allWords ? allWords.match(tokens, 0).map((h) => h.end) : [];
    if (afterAll.some((s) => s === tokens.length || kindWords.match(tokens, s).some((h) => h.end === tokens.length))) return true;
    // A bare kind said in the plural ("Lights"), or "everything": a group. A singular one ("Lamp") may be a name.
    return kindWords.match(tokens, 0).some((h) => h.end === tokens.length && (bareKind || h.plural || h.value === 'everything'));
  };
  // Single kind words long enough to end a compound ("night" + "light"), for the kinds a name says.
  const compoundKinds = kindWords
    ? [...kindWords.phrases()].filter(([said]) => !said.includes(' ') && said.length >= 4).map(([said, v]) => [said, String(v)] as const)
    : [];
  const nameOf = (e: Entity, text: string, own = false) => (groupPhrase(text, own) ? `${text} ${e.kind.replace(/_/g, ' ')}` : text);
  const byWord = new Map<string, Entity[]>();
  // Names the language cannot tell apart ("Movie time" and a later "Movie times"): the entity that comes first
  // (entities are given in rank order: device files, then the first discovered) keeps the phrase.
  const nameHolder = new Map<string, string>();
  const firstHolds = (text: string, id: string) => {
    const said = keys(text).join(' ');
    const held = nameHolder.get(said);
    if (held === undefined) nameHolder.set(said, id);
    return held === undefined || held === id;
  };
  for (const e of entities) {
    byId.set(e.id, e);
    const words = new Set<string>();
    const named = new Set<string>();
    for (const text of [e.name, ...e.aliases]) {
      const tokens = lang.normalizer.tokenize(text);
      for (const t of tokens) words.add(t.w);
      // A name that is a group phrase says nothing of what the device is ("All the lights" is a switch); a kind
      // said in the plural does ("Curtains" are curtains).
      if (groupPhrase(text) && !kindWords?.match(tokens, 0).some((h) => h.end === tokens.length && h.plural && h.value !== 'everything')) continue;
      for (let i = 0; kindWords && i < tokens.length; i++) for (const h of kindWords.match(tokens, i)) named.add(String(h.value));
      // A word made of another and a kind word says that kind too: a plug called "Nightlight" is a light.
      for (const t of tokens) for (const [kind, value] of compoundKinds) if (t.w.length >= kind.length + 3 && t.w.endsWith(kind)) named.add(value);
    }
    classes.set(e.id, { kind: e.kind, deviceClass: e.deviceClass, words, named });
    for (const w of words) (byWord.get(w) ?? byWord.set(w, []).get(w)!).push(e);
    if (firstHolds(e.name, e.id)) names.add(nameOf(e, e.name, true), [e.id], true);
    for (const alias of e.aliases) names.add(nameOf(e, alias), [e.id], true);
    const floor = floorOf(e);
    // A floor is known from any device on it, with an area or without ("the sliding door on the first floor").
    if (floor) floors.add(floor, floor, true);
    if (e.area) {
      areas.add(e.area, e.area, true);
      // "the utility room" for the area "Utility" (never "the bathroom room": only where the area lacks the word).
      for (const [word] of roomWords ? roomWords.phrases() : []) {
        const k = keys(e.area);
        if (k[k.length - 1] !== word) areas.add(`${e.area} ${word}`, e.area);
      }
      areaNames.add(e.area);
      if (floor) floorByArea.set(e.area.toLowerCase(), floor);
    }
    if (e.kind === 'climate') for (const m of e.options.mode ?? []) modeOptions.add(m);
    if (e.kind === 'fan') for (const m of e.options.preset_mode ?? []) presetOptions.add(m);
  }

  // An area or a floor by the other names its owner gave it ("the lounge" for the Living Room), where an exposed
  // device is there; never in place of an area's or a floor's own name.
  for (const a of places?.areas ?? []) if (areaNames.has(a.name)) for (const alias of a.aliases) if (!areas.has(keys(alias))) areas.add(alias, a.name, true);
  for (const f of places?.floors ?? [])
    if (floors.has(keys(f.name))) for (const alias of f.aliases) if (!floors.has(keys(alias))) floors.add(alias, f.name, true);

  // A home option is said as written ("heat_cool" as "heat cool"), or by a synonym in the data.
  const options = (offered: Set<string>, synonyms: string) => {
    const index = new PhraseIndex<string>(keys, (a) => a);
    for (const m of offered) index.add(m.replace(/_/g, ' '), m);
    const data = lang.list(synonyms);
    if (data) {
      for (const [said, value] of dataEntries(data)) if (offered.has(String(value))) index.add(said, String(value));
    }
    return index;
  };

  // Floors by their other words ("downstairs" for the ground floor), from the language's `floor` list. A
  // value may hold only in homes that have (`if`) or lack (`unless`) some floors: how a home names its floors
  // says how it counts them ("first floor" is one up where there is a ground floor), and without a sign
  // the word names no floor rather than a guessed one. The first value that holds for a phrase wins.
  const byKey = new Map<string, string>();
  for (const f of floors.values()) byKey.set(keys(f).join(' '), f);
  const has = (f: unknown) => byKey.has(keys(String(f)).join(' '));
  const listOf = (x: unknown): unknown[] => (x === undefined ? [] : Array.isArray(x) ? x : [x]);
  for (const [said, meant] of lang.phrasesOf('floor')) {
    const rule = meant !== null && typeof meant === 'object' ? (meant as Record<string, unknown>) : { floor: meant };
    if (!listOf(rule.if).every(has) || listOf(rule.unless).some(has)) continue;
    const floor = byKey.get(keys(String(rule.floor)).join(' '));
    if (floor && !floors.has(said.split(' '))) floors.add(said, floor);
  }

  // A name that ends with its own area is said without it too, as a real name beside any other that says the
  // same: two devices called "Ceiling" in the Kitchen and the Kids room are "Ceiling" and "Ceiling (Kitchen)" to
  // the registry (names are distinct), but to a person both are "the ceiling" (which one?), and "the kitchen
  // ceiling" is the area's word and that name.
  for (const e of entities) {
    if (!e.area) continue;
    const k = keys(e.name);
    const a = keys(e.area);
    if (k.length <= a.length || !a.every((w, i) => k[k.length - a.length + i] === w)) continue;
    const stem = k.slice(0, k.length - a.length);
    if (!areas.has(stem) && !floors.has(stem) && !groupPhrase(stem.join(' '), true)) names.addKeys(stem, [e.id]);
  }

  // A reading its device is named after ("Air quality Air quality", the air quality of the device "Air quality")
  // is said by the name once, as a real name.
  for (const e of entities) {
    const k = keys(e.name);
    const h = k.length / 2;
    if (k.length % 2 === 0 && k.slice(0, h).every((w, i) => w === k[h + i]) && !groupPhrase(k.slice(0, h).join(' '), true))
      names.addKeys(k.slice(0, h), [e.id]);
  }

  // An area by the last word of its name, where no other area, floor or name ends so ("the bedroom blind" in a
  // home whose only bedroom is the Master bedroom); never by a word every room has ("room").
  const lastWords = new Map<string, string[]>();
  for (const a of areaNames) {
    const k = keys(a);
    if (k.length < 2) continue;
    const w = k[k.length - 1]!;
    (lastWords.get(w) ?? lastWords.set(w, []).get(w)!).push(a);
  }
  const roomWord = new Set(roomWords ? [...roomWords.phrases()].map(([said]) => said) : []);
  for (const [w, list] of lastWords)
    if (list.length === 1 && !roomWord.has(w) && !areas.has([w]) && !floors.has([w]) && !names.has([w])) areas.addKeys([w], list[0]!);

  // Weaker names, only where no real name says the same: the name without its
  // kind word ("front door" for "Front door lock"), and that with another word
  // for the same kind ("desk light" for "Desk lamp").
  const weak = new Map<string, { keys: string[]; ids: string[] }>();
  const addWeak = (keys: string[], id: string) => {
    // Never in place of an area or floor ("kitchen" from "Kitchen ceiling light"); beside
    // a real name it adds ("garage side door" is the sensor and, by its name, the lock).
    if (!keys.length || areas.has(keys) || floors.has(keys)) return;
    // Never a bare kind either: "Fan light" without "light" is not every "fan" (a bare kind is not a name).
    if (groupPhrase(keys.join(' '), true)) return;
    const k = keys.join(' ');
    const w = weak.get(k) ?? weak.set(k, { keys, ids: [] }).get(k)!;
    if (!w.ids.includes(id)) w.ids.push(id);
  };
  const kindPhrases = new Map<string, string[][]>();
  for (const [said, value] of kindWords ? kindWords.phrases() : []) {
    const list = kindPhrases.get(String(value)) ?? kindPhrases.set(String(value), []).get(String(value))!;
    list.push(said.split(' '));
  }
  // A name with one word for an appliance is said with its others too ("washer" for "Washing machine").
  const sameThing = lang.list('same_thing');
  const others = new Map<string, string[][]>();
  for (const [said, value] of sameThing ? sameThing.phrases() : [])
    (others.get(String(value)) ?? others.set(String(value), []).get(String(value))!).push(said.split(' '));
  for (const e of entities) {
    const tokens = lang.normalizer.tokenize(e.name);
    const k = tokens.map((t) => t.w);
    for (let i = 0; sameThing && i < tokens.length; i++)
      for (const h of sameThing.match(tokens, i))
        for (const other of others.get(String(h.value)) ?? []) addWeak([...k.slice(0, i), ...other, ...k.slice(h.end)], e.id);
  }
  for (const e of entities) {
    // "the pump" for "Pond pump", "the purifier" for "Air purifier": a two-word name of something one commands,
    // by its last word (never a kind, area or floor word: "Floor lamp" is not every "lamp").
    const own = keys(e.name);
    if (own.length === 2 && HEAD_NOUN_KINDS.has(e.kind)) addWeak(own.slice(1), e.id);
    for (const text of [e.name, ...e.aliases]) {
      const k = keys(text);
      // "Roborock" for "Roborock Downstairs": the name without the floor or area it ends with (never a bare
      // kind: "Lamp Bedroom" is not every "lamp").
      for (let i = 1; i < k.length; i++) if (areas.has(k.slice(i)) || floors.has(k.slice(i))) addWeak(k.slice(0, i), e.id);
      for (const [cls, phrases] of kindPhrases) {
        for (const p of phrases) {
          if (k.length <= p.length || !p.every((w, i) => k[k.length - p.length + i] === w)) continue;
          const stem = k.slice(0, k.length - p.length);
          // "kitchen" + "light" is the kitchen's lights, not this one.
          if (areas.has(stem) || floors.has(stem)) continue;
          addWeak(stem, e.id);
          for (const other of kindPhrases.get(cls) ?? []) if (other.length === 1 && other.join(' ') !== p.join(' ')) addWeak([...stem, ...other], e.id);
          // "reading lights" for "Reading corner lights": one word of a longer stem with the kind word.
          if (stem.length > 1)
            for (const w of stem)
              if (
                !stem.some(
                  (_, i) => i < stem.length - 1 && (areas.has(stem.slice(0, i + 1)) || floors.has(stem.slice(0, i + 1))) && stem.slice(0, i + 1).includes(w),
                )
              )
                addWeak([w, ...p], e.id);
        }
      }
    }
  }
  // Beside a real name only when that name is a sensor's: then the weak one reaches the actuator.
  for (const w of weak.values()) {
    const real = names.get(w.keys);
    if (
      real?.some((id) => {
        const e = byId.get(id);
        return !!e && isActuator(e);
      })
    )
      continue;
    names.addKeys(w.keys, w.ids);
  }
  const nameWords = new Set<string>([...names.words(), ...areas.words(), ...floors.words()]);
  return {
    lang,
    entities,
    byId,
    classEntity: classes,
    names,
    areas,
    floors,
    modes: options(modeOptions, 'mode'),
    presets: options(presetOptions, 'preset'),
    areaNames: [...areaNames],
    floorOf: floorByArea,
    nameWords,
    byWord,
  };
}

/** The phrases of a data list with their values. */
function* dataEntries(index: PhraseIndex<unknown>): Iterable<[string, unknown]> {
  for (const phrase of index.phrases()) yield phrase;
}

/** What decides whether the vocabulary must be rebuilt. */
export function vocabularySignature(entities: Entity[], places?: Places): string {
  let s = placesSignature(places);
  for (const e of entities) {
    s += `${e.id}\u0001${e.kind}\u0001${e.name}\u0001${e.aliases.join('\u0002')}\u0001${e.area ?? ''}\u0001${floorOf(e) ?? ''}\u0001${e.deviceClass ?? ''}\u0001${(e.options.mode ?? []).join(',')}\u0001${(e.options.preset_mode ?? []).join(',')}\u0000`;
  }
  return s;
}

/** The areas' and floors' aliases, as the vocabulary's signature has them (a few short strings in any home). */
export function placesSignature(places?: Places): string {
  let s = '';
  for (const list of [places?.areas ?? [], places?.floors ?? []]) {
    for (const p of list) if (p.aliases.length) s += `${p.name}\u0001${p.aliases.join('\u0002')}\u0000`;
    s += '\u0003';
  }
  return s;
}
