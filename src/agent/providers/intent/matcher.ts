// Template syntax -> a small grammar, and matching it against an utterance's
// tokens: every way a template covers the whole utterance, with what each slot
// captured. Backtracking over alternatives and optional parts, as hassil does.
import { tokenize, type Token } from './normalize.js';
import { RULES, SENTENCES, type IntentId, type KindClass } from './sentences.js';
import type { PhraseHit, Vocabulary } from './vocabulary.js';

export type SlotName = 'name' | 'area' | 'kind' | 'feel' | 'presence' | 'all' | 'number' | 'mode' | 'state' | 'hint' | 'color' | 'any';

type Node = { t: 'word'; w: string } | { t: 'alt'; options: Node[][]; optional: boolean } | { t: 'slot'; slot: SlotName };

export interface NumberValue {
  value: number;
  unit?: 'percent' | 'degree';
}

/** What the slots of one match captured. */
export interface Captures {
  name?: PhraseHit<string[]>;
  area?: PhraseHit<string>;
  kind?: PhraseHit<KindClass>;
  all?: PhraseHit<true>;
  number?: NumberValue;
  mode?: string;
  color?: string;
  state?: string;
  hint?: string;
  any?: string;
}

export interface Match {
  intent: IntentId;
  captures: Captures;
  /** Order of the template (earlier wins ties). */
  order: number;
  score: number;
  template: string;
}

const SLOT_NAMES = new Set<SlotName>(['name', 'area', 'kind', 'feel', 'presence', 'all', 'number', 'mode', 'state', 'hint', 'color', 'any']);

class TemplateParser {
  private i = 0;
  private readonly src: string;

  constructor(src: string, private readonly depth = 0) {
    this.src = src;
  }

  parse(): Node[] {
    const seq = this.alternatives(null);
    if (this.i < this.src.length) throw new Error(`unexpected "${this.src[this.i]}" in template: ${this.src}`);
    return seq.length === 1 ? seq[0] : [{ t: 'alt', options: seq, optional: false }];
  }

  /** Sequences separated by `|`, up to the closing bracket. */
  private alternatives(close: string | null): Node[][] {
    const options: Node[][] = [[]];
    while (this.i < this.src.length) {
      const c = this.src[this.i];
      if (c === close) break;
      if (c === ')' || c === ']') throw new Error(`unbalanced "${c}" in template: ${this.src}`);
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
    if (c === ' ') {
      this.i++;
      return [];
    }
    if (c === '(' || c === '[') {
      const close = c === '(' ? ')' : ']';
      this.i++;
      const options = this.alternatives(close);
      if (this.src[this.i] !== close) throw new Error(`missing "${close}" in template: ${this.src}`);
      this.i++;
      return [{ t: 'alt', options, optional: c === '[' }];
    }
    if (c === '{' || c === '<') {
      const close = c === '{' ? '}' : '>';
      const end = this.src.indexOf(close, this.i);
      if (end < 0) throw new Error(`missing "${close}" in template: ${this.src}`);
      const name = this.src.slice(this.i + 1, end);
      this.i = end + 1;
      if (c === '{') {
        if (!SLOT_NAMES.has(name as SlotName)) throw new Error(`unknown slot {${name}} in template: ${this.src}`);
        return [{ t: 'slot', slot: name as SlotName }];
      }
      const rule = RULES[name];
      if (rule === undefined || this.depth > 8) throw new Error(`unknown rule <${name}> in template: ${this.src}`);
      return new TemplateParser(rule, this.depth + 1).parse();
    }
    // A run of plain words, normalised like an utterance.
    let end = this.i;
    while (end < this.src.length && !'()[]{}<>|'.includes(this.src[end])) end++;
    const words = this.src.slice(this.i, end);
    this.i = end;
    return tokenize(words).map((t) => ({ t: 'word' as const, w: t.w }));
  }
}

export interface CompiledTemplate {
  intent: IntentId;
  source: string;
  nodes: Node[];
  order: number;
}

let compiled: CompiledTemplate[] | undefined;

/** Every sentence template, parsed once. */
export function templates(): CompiledTemplate[] {
  if (!compiled) {
    let order = 0;
    compiled = SENTENCES.flatMap((g) => g.sentences.map((source) => ({ intent: g.intent, source, nodes: new TemplateParser(source).parse(), order: order++ })));
  }
  return compiled;
}

type SlotHit = { end: number; set: (c: Captures) => Captures | undefined; tokens: number };

function numberHits(tokens: Token[], pos: number): SlotHit[] {
  const t = tokens[pos];
  const out: SlotHit[] = [];
  const put = (end: number, value: NumberValue) =>
    out.push({ end, tokens: end - pos, set: (c) => (c.number ? undefined : { ...c, number: value }) });
  if (!t) return out;
  if (t.num !== undefined) {
    put(pos + 1, { value: t.num });
    const next = tokens[pos + 1]?.w;
    if (next === 'percent' || next === 'per') {
      const end = next === 'per' && tokens[pos + 2]?.w === 'cent' ? pos + 3 : pos + 2;
      put(end, { value: t.num, unit: 'percent' });
    }
    if (next === 'degree' || next === 'celsius' || next === 'centigrade') {
      put(pos + 2, { value: t.num, unit: 'degree' });
      const after = tokens[pos + 2]?.w;
      if (next === 'degree' && ['celsius', 'c', 'centigrade', 'fahrenheit', 'f'].includes(after ?? '')) put(pos + 3, { value: t.num, unit: 'degree' });
    }
    return out;
  }
  if (t.w === 'half' || t.w === 'halfway') put(pos + 1, { value: 50, unit: 'percent' });
  if (t.w === 'half' && tokens[pos + 1]?.w === 'way') put(pos + 2, { value: 50, unit: 'percent' });
  if (t.w === 'full' || t.w === 'max' || t.w === 'maximum') put(pos + 1, { value: 100, unit: 'percent' });
  return out;
}

function phraseHits<T>(hits: PhraseHit<T>[], pos: number, key: keyof Captures, wrap: (h: PhraseHit<T>) => unknown = (h) => h): SlotHit[] {
  return hits.map((h) => ({
    end: h.end,
    tokens: h.end - pos,
    set: (c: Captures) => (c[key] !== undefined ? undefined : ({ ...c, [key]: wrap(h) } as Captures)),
  }));
}

function slotHits(slot: SlotName, tokens: Token[], pos: number, v: Vocabulary): SlotHit[] {
  switch (slot) {
    case 'name':
      return phraseHits(v.names.match(tokens, pos), pos, 'name');
    case 'area':
      return phraseHits(v.areas.match(tokens, pos), pos, 'area');
    case 'kind':
      return phraseHits(v.kinds.match(tokens, pos), pos, 'kind');
    case 'feel':
      return phraseHits(v.feel.match(tokens, pos), pos, 'kind');
    case 'presence':
      return phraseHits(v.presence.match(tokens, pos), pos, 'kind');
    case 'all':
      return phraseHits(v.all.match(tokens, pos), pos, 'all');
    case 'mode':
      return phraseHits(v.modes.match(tokens, pos), pos, 'mode', (h) => h.value);
    case 'state':
      return phraseHits(v.states.match(tokens, pos), pos, 'state', (h) => h.value);
    case 'hint':
      return phraseHits(v.hints.match(tokens, pos), pos, 'hint', (h) => h.value);
    case 'color':
      return phraseHits(v.colors.match(tokens, pos), pos, 'color', (h) => h.value);
    case 'number':
      return numberHits(tokens, pos);
    case 'any': {
      const out: SlotHit[] = [];
      for (let end = pos + 1; end <= tokens.length && end - pos <= 8; end++) {
        const said = tokens.slice(pos, end).map((t) => (t.num !== undefined ? String(t.num) : t.w)).join(' ');
        out.push({ end, tokens: end - pos, set: (c) => (c.any !== undefined ? undefined : { ...c, any: said }) });
      }
      return out;
    }
  }
}

type Cont = (pos: number, caps: Captures, lit: number) => void;

function matchSeq(nodes: Node[], i: number, pos: number, caps: Captures, lit: number, tokens: Token[], v: Vocabulary, k: Cont, budget: { n: number }): void {
  if (--budget.n < 0) return;
  if (i === nodes.length) return k(pos, caps, lit);
  const node = nodes[i];
  if (node.t === 'word') {
    if (pos < tokens.length && tokens[pos].w === node.w) matchSeq(nodes, i + 1, pos + 1, caps, lit + 1, tokens, v, k, budget);
    return;
  }
  if (node.t === 'slot') {
    for (const hit of slotHits(node.slot, tokens, pos, v)) {
      const next = hit.set(caps);
      if (next) matchSeq(nodes, i + 1, hit.end, next, lit, tokens, v, k, budget);
    }
    return;
  }
  const rest: Cont = (p, c, l) => matchSeq(nodes, i + 1, p, c, l, tokens, v, k, budget);
  for (const option of node.options) matchSeq(option, 0, pos, caps, lit, tokens, v, rest, budget);
  if (node.optional) matchSeq(nodes, i + 1, pos, caps, lit, tokens, v, k, budget);
}

/** How much a match is worth: naming a device beats describing one; wildcards lose. */
function scoreOf(c: Captures): number {
  let s = 0;
  if (c.name) s += 4 + c.name.said.split(' ').length;
  if (c.any !== undefined) s -= 100;
  return s;
}

/** Every full match of every template, best first. */
export function matchAll(tokens: Token[], v: Vocabulary): Match[] {
  const out: Match[] = [];
  if (!tokens.length) return out;
  const seen = new Set<string>();
  for (const tpl of templates()) {
    const budget = { n: 20000 };
    matchSeq(tpl.nodes, 0, 0, {}, 0, tokens, v, (pos, caps) => {
      if (pos !== tokens.length) return;
      const key = `${tpl.intent}|${captureKey(caps)}`;
      if (seen.has(key)) return;
      seen.add(key);
      out.push({ intent: tpl.intent, captures: caps, order: tpl.order, score: scoreOf(caps), template: tpl.source });
    }, budget);
  }
  return out.sort((a, b) => b.score - a.score || a.order - b.order);
}

function captureKey(c: Captures): string {
  return [
    c.name ? `n:${c.name.said}` : '',
    c.area ? `a:${c.area.value}` : '',
    c.kind ? `k:${c.kind.value.id}:${c.kind.plural}` : '',
    c.all ? 'all' : '',
    c.number ? `#${c.number.value}${c.number.unit ?? ''}` : '',
    c.mode ?? '',
    c.color ?? '',
    c.state ?? '',
    c.hint ?? '',
    c.any ?? '',
  ].join('|');
}
