// The sentence data compiled once into token patterns, and matching them
// against an utterance's tokens: every way a sentence covers the whole
// utterance, with what each slot captured. Hassil's template syntax: `(a|b)`
// alternatives, `[a]` optional parts, `{list}` / `{list:slot}` slot lists and
// `<rule>` expansion rules (inlined at compile time). Each sentence is indexed
// by the words it can start with, so an utterance is only tried against the
// sentences that could begin the way it does.
import type { Entity } from '../../../devices/model.js';
import type { LanguageData, Origin, Problem } from './language.js';
import { Normalizer, type Token } from './normalize.js';
import { Responses } from './responses.js';
import { PhraseIndex, type PhraseHit } from './phrases.js';
import { kindClass, type IntentId, type KindClass } from './sentences.js';
import type { Vocabulary } from './vocabulary.js';

/** Home Assistant domains -> Hearth kind classes. */
const DOMAIN_KIND: Record<string, string> = { binary_sensor: 'sensor', media_player: 'switch', input_boolean: 'switch', scene: 'button', script: 'button' };

/** Lists the home fills (names, areas...) rather than the sentence data. */
const HOME_LISTS = new Set(['name', 'area', 'floor', 'mode', 'preset', 'number']);

type SlotSource =
  | { type: 'home'; list: 'name' | 'area' | 'floor' | 'mode' | 'preset' }
  | { type: 'number' }
  | { type: 'range'; from: number; to: number }
  | { type: 'values'; index: PhraseIndex<unknown> }
  | { type: 'wildcard' };

type Node = { t: 'word'; w: string } | { t: 'alt'; options: Node[][]; optional: boolean } | { t: 'slot'; slot: string; source: SlotSource };

export interface NumberValue {
  value: number;
  unit?: string;
}

/** What the slots of one match captured. */
export interface Captures {
  /** Every name said ("the hall light and the porch light"). */
  names: PhraseHit<string[]>[];
  area?: PhraseHit<string>;
  floor?: PhraseHit<string>;
  kind?: PhraseHit<KindClass>;
  all?: boolean;
  number?: NumberValue;
  mode?: string;
  preset?: string;
  color?: string;
  state?: string;
  hint?: string;
  direction?: 'up' | 'down';
  /** "in here": the speaker's area. */
  here?: boolean;
  /** "it", "them": what the session's last sentence was about. */
  reference?: boolean;
  any?: string;
  /** Other slots a user's sentences fill. */
  other: Record<string, unknown>;
}

export interface Match {
  intent: IntentId;
  captures: Captures;
  /** Order of the sentence (earlier wins ties). */
  order: number;
  score: number;
  template: string;
  origin: Origin;
}

export interface MatchContext {
  /** The speaker's area, when the session has one. */
  area?: string;
  /** What the session's last command acted on, for "turn it off", "make it blue", "and the hallway too". */
  previous?: PreviousTurn;
  /** The entities the caller may read: the others are not known to it (never named, counted or suggested). */
  readable?: (entityId: string) => boolean;
}

/** A session's last command: what it meant and what it acted on. */
export interface PreviousTurn {
  intent: IntentId;
  captures: Captures;
  entities: Entity[];
}

interface CompiledTemplate {
  /** Words every match must contain (a sentence is skipped when one is missing). */
  required: string[];
  intent: IntentId;
  source: string;
  origin: Origin;
  nodes: Node[];
  order: number;
  slots: Record<string, unknown>;
  requiresArea: boolean;
}

class TemplateError extends Error {}

/**
 * Hassil lets a group sit inside a word: `light[s]`, `turn(ed|ing)`, `(un)lock`.
 * Tokens are whole words, so such a word becomes a group of whole words first.
 */
export function expandWordGroups(src: string): string {
  let out = src;
  for (let i = 0; i < 8; i++) {
    const next = out
      .replace(/([\p{L}\p{N}'-]+)([([])([^()[\]{}<>]*)([)\]])/gu, (m, word: string, open: string, inner: string, close: string) => {
        if ((open === '(') !== (close === ')')) return m;
        const parts = inner.split('|').map((p) => p.trim());
        if (open === '[') parts.push('');
        return `(${[...new Set(parts.map((p) => word + p))].join(' | ')})`;
      })
      .replace(/([([])([^()[\]{}<>]*)([)\]])([\p{L}\p{N}'-]+)/gu, (m, open: string, inner: string, close: string, word: string) => {
        if ((open === '(') !== (close === ')')) return m;
        const parts = inner.split('|').map((p) => p.trim());
        if (open === '[') parts.push('');
        return `(${[...new Set(parts.map((p) => p + word))].join(' | ')})`;
      });
    if (next === out) break;
    out = next;
  }
  return out;
}

class TemplateParser {
  private i = 0;
  private readonly src: string;

  constructor(
    src: string,
    private readonly lang: CompiledLanguage,
    private readonly rules: LanguageData['rules'],
    private readonly depth = 0,
  ) {
    this.src = expandWordGroups(src);
  }

  parse(): Node[] {
    const seq = this.alternatives(null);
    if (this.i < this.src.length) throw new TemplateError(`unexpected "${this.src[this.i]}" at ${this.i + 1}`);
    return seq.length === 1 ? seq[0] : [{ t: 'alt', options: seq, optional: false }];
  }

  private alternatives(close: string | null): Node[][] {
    const options: Node[][] = [[]];
    while (this.i < this.src.length) {
      const c = this.src[this.i];
      if (c === close) break;
      if (c === ')' || c === ']') throw new TemplateError(`unbalanced "${c}" at ${this.i + 1}`);
      if (c === '|') {
        this.i++;
        options.push([]);
        continue;
      }
      options[options.length - 1].push(...this.item());
    }
    return options;
  }

  private item(): Node[] {
    const c = this.src[this.i];
    if (c === '(' || c === '[') {
      const close = c === '(' ? ')' : ']';
      this.i++;
      const options = this.alternatives(close);
      if (this.src[this.i] !== close) throw new TemplateError(`missing "${close}"`);
      this.i++;
      return [{ t: 'alt', options, optional: c === '[' }];
    }
    if (c === '{' || c === '<') {
      const close = c === '{' ? '}' : '>';
      const end = this.src.indexOf(close, this.i);
      if (end < 0) throw new TemplateError(`missing "${close}"`);
      const inner = this.src.slice(this.i + 1, end).trim();
      this.i = end + 1;
      if (c === '{') {
        const [list, slot = list] = inner.split(':').map((s) => s.trim());
        return [{ t: 'slot', slot, source: this.lang.source(list) }];
      }
      const rule = this.rules.get(inner);
      if (!rule) throw new TemplateError(`unknown expansion rule <${inner}>`);
      if (this.depth > 10) throw new TemplateError(`expansion rule <${inner}> expands into itself`);
      // A rule parses to the same nodes everywhere: parsed once, shared.
      const cached = this.lang.ruleNodes.get(inner);
      if (cached) return cached;
      const nodes = new TemplateParser(rule.template, this.lang, this.rules, this.depth + 1).parse();
      this.lang.ruleNodes.set(inner, nodes);
      return nodes;
    }
    // A run of plain words, normalised like an utterance.
    let end = this.i;
    while (end < this.src.length && !'()[]{}<>|'.includes(this.src[end])) end++;
    const words = this.src.slice(this.i, end);
    this.i = end;
    return this.lang.normalizer.tokenize(words).map((t) => ({ t: 'word' as const, w: t.w }));
  }
}

/** All the phrases a words-only template stands for (list values such as "(lamp|light)"). */
function expand(nodes: Node[], limit = 64): string[] {
  let out: string[][] = [[]];
  for (const n of nodes) {
    if (n.t === 'word') out = out.map((p) => [...p, n.w]);
    else if (n.t === 'alt') {
      const tails = n.options.flatMap((o) => expand(o, limit)).map((s) => (s ? s.split(' ') : []));
      if (n.optional) tails.push([]);
      out = out.flatMap((p) => tails.map((t) => [...p, ...t])).slice(0, limit);
    }
  }
  return out.map((p) => p.join(' '));
}

export class CompiledLanguage {
  readonly normalizer: Normalizer;
  readonly templates: CompiledTemplate[] = [];
  readonly problems: Problem[];
  /** What the model says in this language. */
  readonly responses: Responses;
  /** Data lists by name, compiled to phrase indexes. */
  readonly lists = new Map<string, PhraseIndex<unknown>>();
  /** Every (phrase, value) of each value list in data order, before the first of a phrase wins. */
  private readonly allPhrases = new Map<string, Array<[string, unknown]>>();
  /** Every word a sentence or list may say (never "corrected" as a typo). */
  readonly words = new Set<string>();
  /** Expansion rules, parsed once. */
  readonly ruleNodes = new Map<string, Node[]>();
  private readonly byFirst = new Map<string, CompiledTemplate[]>();
  private readonly open: CompiledTemplate[] = [];
  private readonly data: LanguageData;

  constructor(data: LanguageData) {
    this.data = data;
    this.problems = [...data.problems];
    this.normalizer = new Normalizer(data.normalize);
    this.responses = new Responses(data.responses);
    const missing = this.responses.missing();
    if (missing.length)
      this.problems.push({
        file: data.files[0] ?? 'sentences',
        line: 1,
        reason: `responses missing (the model would say their names instead): ${missing.join(', ')}`,
      });
    const keys = (t: string) => this.normalizer.keys(t);
    for (const [name, list] of data.lists) {
      if (list.type !== 'values') continue;
      const index = new PhraseIndex<unknown>(keys, (a) => a);
      const all: Array<[string, unknown]> = [];
      this.allPhrases.set(name, all);
      for (const v of list.values) {
        try {
          for (const phrase of expand(new TemplateParser(v.in, this, new Map()).parse())) {
            index.add(phrase, v.out);
            all.push([keys(phrase).join(' '), v.out]);
          }
        } catch (err) {
          this.problems.push({ ...v.origin, reason: `list ${name}: "${v.in}": ${(err as Error).message}` });
        }
      }
      this.lists.set(name, index);
      for (const w of index.words()) this.words.add(w);
    }
    let order = 0;
    for (const block of data.data) {
      for (const s of block.sentences) {
        try {
          const nodes = new TemplateParser(s.text, this, data.rules).parse();
          const tpl: CompiledTemplate = {
            required: [...requiredWords(nodes)],
            intent: block.intent,
            source: s.text,
            origin: s.origin,
            nodes,
            order: order++,
            slots: block.slots,
            requiresArea: block.requiresContext.includes('area'),
          };
          this.templates.push(tpl);
          this.collectWords(nodes);
          const first = firstWords(nodes);
          if (!first) this.open.push(tpl);
          else for (const w of first) (this.byFirst.get(w) ?? this.byFirst.set(w, []).get(w)!).push(tpl);
        } catch (err) {
          this.problems.push({ ...s.origin, reason: `intent ${block.intent}: sentence "${s.text}": ${(err as Error).message}` });
        }
      }
    }
  }

  /** Where a `{list}` gets its values. */
  source(list: string): SlotSource {
    if (list === 'number') return { type: 'number' };
    if (HOME_LISTS.has(list)) return { type: 'home', list: list as 'name' | 'area' | 'floor' | 'mode' | 'preset' };
    const data = this.data.lists.get(list);
    if (!data) throw new TemplateError(`unknown list {${list}}`);
    if (data.type === 'range') return { type: 'range', from: data.from, to: data.to };
    if (data.type === 'wildcard') return { type: 'wildcard' };
    return { type: 'values', index: this.lists.get(list) ?? new PhraseIndex<unknown>(() => []) };
  }

  /** The data list of this name's values as said -> value (synonyms for climate modes, say). */
  list(name: string): PhraseIndex<unknown> | undefined {
    return this.lists.get(name);
  }

  /** Every phrase of a value list with its value, in data order, a phrase said in several values once for each. */
  phrasesOf(name: string): ReadonlyArray<[string, unknown]> {
    return this.allPhrases.get(name) ?? [];
  }

  private collectWords(nodes: Node[]): void {
    for (const n of nodes) {
      if (n.t === 'word') this.words.add(n.w);
      else if (n.t === 'alt') for (const o of n.options) this.collectWords(o);
    }
  }

  /** The sentences that could start with this token, in data order. */
  candidates(first: Token): CompiledTemplate[] {
    const keyed = this.byFirst.get(first.w) ?? [];
    if (!keyed.length) return this.open;
    return [...keyed, ...this.open].sort((a, b) => a.order - b.order);
  }
}

/** Words on every path through the nodes. */
function requiredWords(nodes: Node[]): Set<string> {
  const out = new Set<string>();
  for (const n of nodes) {
    if (n.t === 'word') out.add(n.w);
    else if (n.t === 'alt' && !n.optional && n.options.length) {
      let common: Set<string> | undefined;
      for (const o of n.options) {
        const r = requiredWords(o);
        common = common ? new Set([...common].filter((w) => r.has(w))) : r;
      }
      for (const w of common ?? []) out.add(w);
    }
  }
  return out;
}

/** Words a node list can start with; undefined when it can start with a slot or be empty. */
function firstWords(nodes: Node[]): Set<string> | undefined {
  const s = starts(nodes);
  return s.open || s.nullable ? undefined : s.words;
}

function starts(nodes: Node[]): { words: Set<string>; open: boolean; nullable: boolean } {
  const words = new Set<string>();
  for (const n of nodes) {
    let nullable = false;
    if (n.t === 'word') words.add(n.w);
    else if (n.t === 'slot') {
      if (n.source.type !== 'values') return { words, open: true, nullable: false };
      for (const w of n.source.index.firsts()) words.add(w);
    } else {
      nullable = n.optional;
      for (const o of n.options) {
        const s = starts(o);
        if (s.open) return { words, open: true, nullable: false };
        for (const w of s.words) words.add(w);
        if (s.nullable) nullable = true;
      }
    }
    if (!nullable) return { words, open: false, nullable: false };
  }
  return { words, open: false, nullable: true };
}

// ------------------------------------------------------------------ matching

type SlotHit = { end: number; set: (c: Captures) => Captures | undefined };

const once =
  <K extends keyof Captures>(key: K, value: Captures[K]) =>
  (c: Captures) =>
    c[key] !== undefined ? undefined : { ...c, [key]: value };

function numberHits(tokens: Token[], pos: number, lang: CompiledLanguage, slot: string, range?: { from: number; to: number }): SlotHit[] {
  const t = tokens[pos];
  const out: SlotHit[] = [];
  if (t?.num === undefined) return out;
  if (range && (t.num < range.from || t.num > range.to)) return out;
  const put = (end: number, value: NumberValue) => out.push({ end, set: setSlot(slot, value) });
  put(pos + 1, { value: t.num });
  const units = lang.list('unit');
  if (units) for (const u of units.match(tokens, pos + 1)) put(u.end, { value: t.num, unit: String(u.value) });
  return out;
}

/** The capture a slot name fills. */
function setSlot(slot: string, value: unknown, hit?: PhraseHit<unknown>): (c: Captures) => Captures | undefined {
  switch (slot) {
    case 'number':
      if (typeof value === 'number') return once('number', { value, unit: 'percent' });
      return once('number', value as NumberValue);
    // Home Assistant's slot names for numbers: a percentage, or a temperature.
    case 'brightness':
    case 'position':
    case 'percentage':
      return once('number', { value: typeof value === 'number' ? value : (value as NumberValue).value, unit: 'percent' });
    case 'temperature':
      return once('number', { value: typeof value === 'number' ? value : (value as NumberValue).value, unit: 'degree' });
    // Home Assistant's `domain` slot ("slots: {domain: light}") names a kind of device.
    case 'domain':
      return (c) => (c.kind ? c : { ...c, kind: { end: 0, value: kindClass(DOMAIN_KIND[String(value)] ?? String(value)), plural: true, said: String(value) } });
    case 'kind':
      return once('kind', { ...hit!, value: kindClass(String(value)) });
    case 'all':
      return once('all', true);
    case 'here':
      return once('here', true);
    case 'reference':
      return once('reference', true);
    case 'direction':
      return once('direction', value === 'down' ? 'down' : 'up');
    case 'mode':
    case 'preset':
    case 'color':
    case 'state':
    case 'hint':
    case 'any':
      return once(slot, String(value));
    // The whole home said twice ("house lights off everywhere") is still the whole home.
    case 'whole':
      return (c) => (c.other.whole !== undefined ? c : { ...c, other: { ...c.other, whole: value } });
    default:
      return (c) => (slot in c.other ? undefined : { ...c, other: { ...c.other, [slot]: value } });
  }
}

/** Slot hits per utterance, by slot node and position: many sentences ask the same. */
type HitCache = Map<Extract<Node, { t: 'slot' }>, SlotHit[][]>;

function cachedSlotHits(node: Extract<Node, { t: 'slot' }>, tokens: Token[], pos: number, v: Vocabulary, lang: CompiledLanguage, cache: HitCache): SlotHit[] {
  let byPos = cache.get(node);
  if (!byPos) cache.set(node, (byPos = []));
  return (byPos[pos] ??= slotHits(node, tokens, pos, v, lang));
}

function slotHits(node: Extract<Node, { t: 'slot' }>, tokens: Token[], pos: number, v: Vocabulary, lang: CompiledLanguage): SlotHit[] {
  const src = node.source;
  switch (src.type) {
    case 'number':
      return numberHits(tokens, pos, lang, node.slot);
    case 'range':
      return numberHits(tokens, pos, lang, node.slot, src);
    case 'values':
      return src.index.match(tokens, pos).map((h) => ({ end: h.end, set: setSlot(node.slot, h.value, h) }));
    case 'wildcard': {
      const out: SlotHit[] = [];
      for (let end = pos + 1; end <= tokens.length && end - pos <= 8; end++) {
        const said = tokens
          .slice(pos, end)
          .map((t) => (t.num !== undefined ? String(t.num) : t.w))
          .join(' ');
        out.push({ end, set: setSlot(node.slot === 'any' ? 'any' : node.slot, said) });
      }
      return out;
    }
    case 'home':
      switch (src.list) {
        case 'name':
          // A sentence may name several devices: every name is kept.
          return v.names
            .match(tokens, pos)
            .map((h) => ({ end: h.end, set: (c: Captures) => (c.names.some((n) => n.said === h.said) ? undefined : { ...c, names: [...c.names, h] }) }));
        case 'area':
          // {area:area2} fills a slot of another name with the area.
          return v.areas.match(tokens, pos).map((h) => ({ end: h.end, set: node.slot === 'area' ? once('area', h) : setSlot(node.slot, h.value) }));
        case 'floor':
          // {floor:floor2}: a second floor ("the first and second floor").
          return v.floors.match(tokens, pos).map((h) => ({ end: h.end, set: node.slot === 'floor' ? once('floor', h) : setSlot(node.slot, h.value) }));
        case 'mode':
          return v.modes.match(tokens, pos).map((h) => ({ end: h.end, set: once('mode', h.value) }));
        case 'preset':
          return v.presets.match(tokens, pos).map((h) => ({ end: h.end, set: once('preset', h.value) }));
      }
  }
}

type Cont = (pos: number, caps: Captures) => void;

interface Run {
  tokens: Token[];
  v: Vocabulary;
  lang: CompiledLanguage;
  cache: HitCache;
  budget: number;
}

function matchSeq(nodes: Node[], i: number, pos: number, caps: Captures, run: Run, k: Cont): void {
  if (--run.budget < 0) return;
  if (i === nodes.length) return k(pos, caps);
  const node = nodes[i];
  const tokens = run.tokens;
  if (node.t === 'word') {
    if (pos < tokens.length && tokens[pos].w === node.w) matchSeq(nodes, i + 1, pos + 1, caps, run, k);
    return;
  }
  if (pos > tokens.length) return;
  if (node.t === 'slot') {
    for (const hit of cachedSlotHits(node, tokens, pos, run.v, run.lang, run.cache)) {
      const next = hit.set(caps);
      if (next) matchSeq(nodes, i + 1, hit.end, next, run, k);
    }
    return;
  }
  const rest: Cont = (p, c) => matchSeq(nodes, i + 1, p, c, run, k);
  for (const option of node.options) matchSeq(option, 0, pos, caps, run, rest);
  if (node.optional) matchSeq(nodes, i + 1, pos, caps, run, k);
}

/** How much a match is worth: naming a device beats describing one; wildcards lose. */
function scoreOf(c: Captures, context: MatchContext): number {
  let s = 0;
  // "it" in a session that has said what it is: as good as its name.
  if (c.reference && context.previous) s += 6;
  // One longer name beats the same words read as several names.
  if (c.names.length) s += 4 + 2 * c.names.reduce((n, x) => n + x.said.split(' ').length, 0) - (c.names.length - 1);
  if (c.any !== undefined) s -= 100;
  return s;
}

/** Fixed values a data block gives every match ("slots: {direction: up}"). */
function withFixed(c: Captures, slots: Record<string, unknown>): Captures {
  let out = c;
  for (const [slot, value] of Object.entries(slots)) {
    if (slot === 'kind') out = out.kind ? out : { ...out, kind: { end: 0, value: kindClass(String(value)), plural: true, said: String(value) } };
    else if (slot === 'domain') out = setSlot(slot, value)(out) ?? out;
    else if (slot === 'name' || slot === 'area' || slot === 'floor') continue;
    else out = setSlot(slot, value)(out) ?? out;
  }
  return out;
}

/** Every full match of every sentence, best first. */
export function matchAll(tokens: Token[], v: Vocabulary, lang: CompiledLanguage, context: MatchContext = {}): Match[] {
  const out: Match[] = [];
  if (!tokens.length) return out;
  const seen = new Set<string>();
  const said = new Set(tokens.map((t) => t.w));
  const cache: HitCache = new Map();
  const deferred: CompiledTemplate[] = [];
  const each = (tpl: CompiledTemplate) => {
    if (tpl.requiresArea && !context.area) return;
    if (!tpl.required.every((w) => said.has(w))) return;
    const run: Run = { tokens, v, lang, cache, budget: 20000 };
    const start: Captures = { names: [], other: {} };
    matchSeq(tpl.nodes, 0, 0, start, run, (pos, caps) => {
      if (pos !== tokens.length) return;
      let c = withFixed(caps, tpl.slots);
      if (tpl.requiresArea && !c.area) c = { ...c, area: { end: 0, value: context.area!, plural: false, said: context.area! } };
      const key = `${tpl.intent}|${captureKey(c)}`;
      if (seen.has(key)) return;
      seen.add(key);
      // A follow-up ("what about the bedroom") in a session that has something to follow beats a reading on its own.
      const follow = tpl.intent === 'HearthRepeat' && context.previous ? 1 : 0;
      out.push({ intent: tpl.intent, captures: c, order: tpl.order, score: scoreOf(c, context) + follow, template: tpl.source, origin: tpl.origin });
    });
  };
  for (const tpl of lang.candidates(tokens[0])) {
    // Sentences for unknown devices and for what Hearth does not do only matter when nothing else matched
    // (a home's own "Good night" scene is its name).
    if (tpl.intent === 'UnknownDevice' || tpl.intent === 'HearthOutOfScope') deferred.push(tpl);
    else each(tpl);
  }
  if (!out.length) for (const tpl of deferred) each(tpl);
  return out.sort((a, b) => b.score - a.score || a.order - b.order);
}

function captureKey(c: Captures): string {
  return [
    c.names.map((n) => `n:${n.said}`).join(','),
    c.area ? `a:${c.area.value}` : '',
    c.floor ? `f:${c.floor.value}` : '',
    c.kind ? `k:${c.kind.value.id}:${c.kind.plural}` : '',
    c.all ? 'all' : '',
    c.number ? `#${c.number.value}${c.number.unit ?? ''}` : '',
    c.mode ?? '',
    c.preset ?? '',
    c.color ?? '',
    c.state ?? '',
    c.hint ?? '',
    c.direction ?? '',
    c.here ? 'here' : '',
    c.reference ? 'it' : '',
    c.any ?? '',
    JSON.stringify(c.other),
  ].join('|');
}
