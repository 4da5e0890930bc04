// Sentence data on disk: YAML files in Home Assistant's custom-sentence format
// (`intents: <Intent>: data: [{sentences, slots, requires_context}]`, `lists`,
// `expansion_rules`, `skip_words`), plus Hearth's `normalize:` block. The
// shipped folder (sentences/<language>/) is read first, then a user's folder:
// its lists and rules replace the shipped ones of the same name, its sentences
// are added. A bad file or entry is a problem naming file, line and reason;
// the rest is kept.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Node as YamlNode } from 'yaml';
import { EMPTY_NORMALIZE, type NormalizeData } from './normalize.js';
import { readResponses, type ResponseData } from './responses.js';
import { INTENT_IDS, type IntentId } from './sentences.js';

/** The sentence folders shipped with Hearth: <package>/sentences/<language>/. */
export const SHIPPED_SENTENCES = fileURLToPath(new URL('../../../../sentences', import.meta.url));

export interface Problem {
  file: string;
  line: number;
  reason: string;
}

export interface Origin {
  file: string;
  line: number;
}

export interface SentenceData {
  intent: IntentId;
  sentences: Array<{ text: string; origin: Origin }>;
  /** Fixed slot values this data block adds to every match. */
  slots: Record<string, unknown>;
  /** Context the speaker must have (`area`): it fills the slot of that name. */
  requiresContext: string[];
}

export type ListData =
  | { type: 'values'; values: Array<{ in: string; out: unknown; origin: Origin }>; origin: Origin }
  | { type: 'range'; from: number; to: number; step: number; origin: Origin }
  | { type: 'wildcard'; origin: Origin };

export interface LanguageData {
  data: SentenceData[];
  lists: Map<string, ListData>;
  rules: Map<string, { template: string; origin: Origin }>;
  normalize: NormalizeData;
  /** What the model says, by response key (a user's file replaces a key). */
  responses: Map<string, ResponseData>;
  problems: Problem[];
  files: string[];
}

const INTENTS = new Set<string>(INTENT_IDS);

class FileReader {
  readonly lines = new LineCounter();
  constructor(
    readonly file: string,
    private readonly out: LanguageData,
  ) {}

  line(node: YamlNode | null | undefined): number {
    const at = node?.range?.[0];
    return at === undefined ? 1 : this.lines.linePos(at).line;
  }

  origin(node: YamlNode | null | undefined): Origin {
    return { file: this.file, line: this.line(node) };
  }

  problem(node: YamlNode | null | undefined, reason: string): void {
    this.out.problems.push({ file: this.file, line: this.line(node), reason });
  }

  /** A map's entries as [key, value node]. */
  entries(node: unknown): Array<[string, YamlNode | null, YamlNode | null]> {
    if (!isMap(node)) return [];
    return node.items.map((p) => [String(isScalar(p.key) ? p.key.value : p.key), p.value as YamlNode | null, p.key as YamlNode | null]);
  }

  strings(node: YamlNode | null, what: string): Array<{ text: string; node: YamlNode }> {
    if (isScalar(node) && typeof node.value === 'string') return [{ text: node.value, node }];
    if (!isSeq(node)) {
      this.problem(node, `${what} must be a list of strings`);
      return [];
    }
    const out: Array<{ text: string; node: YamlNode }> = [];
    for (const item of node.items) {
      if (isScalar(item) && (typeof item.value === 'string' || typeof item.value === 'number')) out.push({ text: String(item.value), node: item });
      else this.problem(item as YamlNode, `${what}: every entry must be a string`);
    }
    return out;
  }
}

function plain(node: YamlNode | null): unknown {
  return node && 'toJSON' in node ? (node as { toJSON(): unknown }).toJSON() : null;
}

function readIntents(r: FileReader, node: YamlNode | null, out: LanguageData): void {
  for (const [name, value, key] of r.entries(node)) {
    if (!INTENTS.has(name)) {
      r.problem(key, `unknown intent "${name}" (Hearth carries out: ${INTENT_IDS.filter((i) => i !== 'UnknownDevice').join(', ')})`);
      continue;
    }
    const data = r.entries(value).find(([k]) => k === 'data')?.[1] ?? null;
    if (!isSeq(data)) {
      r.problem(value ?? key, `intent ${name} needs "data:", a list of {sentences: [...]}`);
      continue;
    }
    for (const block of data.items as YamlNode[]) {
      const fields = new Map(r.entries(block).map(([k, v]) => [k, v]));
      if (!fields.has('sentences')) {
        r.problem(block, `intent ${name}: a data entry needs "sentences:"`);
        continue;
      }
      const slots = fields.get('slots');
      const slotValues = slots ? plain(slots) : {};
      if (slots && (typeof slotValues !== 'object' || slotValues === null || Array.isArray(slotValues))) {
        r.problem(slots, `intent ${name}: "slots" must be a map of slot name to value`);
        continue;
      }
      const ctx = fields.get('requires_context');
      const context = ctx ? r.entries(ctx).map(([k]) => k) : [];
      for (const k of context) if (k !== 'area') r.problem(ctx, `intent ${name}: requires_context "${k}" is not known (Hearth knows: area)`);
      out.data.push({
        intent: name as IntentId,
        sentences: r.strings(fields.get('sentences')!, `intent ${name} sentences`).map((s) => ({ text: s.text, origin: r.origin(s.node) })),
        slots: slotValues as Record<string, unknown>,
        requiresContext: context.filter((k) => k === 'area'),
      });
    }
  }
}

function readLists(r: FileReader, node: YamlNode | null, out: LanguageData): void {
  for (const [name, value, key] of r.entries(node)) {
    const fields = new Map(r.entries(value).map(([k, v]) => [k, v]));
    const origin = r.origin(key);
    if (fields.has('values')) {
      const values = fields.get('values');
      if (!isSeq(values)) {
        r.problem(values ?? key, `list ${name}: "values" must be a list`);
        continue;
      }
      const list: Array<{ in: string; out: unknown; origin: Origin }> = [];
      for (const item of values.items as YamlNode[]) {
        if (isScalar(item) && (typeof item.value === 'string' || typeof item.value === 'number')) {
          list.push({ in: String(item.value), out: item.value, origin: r.origin(item) });
          continue;
        }
        const v = new Map(r.entries(item).map(([k, x]) => [k, x]));
        const said = v.get('in');
        if (!isScalar(said) || (typeof said.value !== 'string' && typeof said.value !== 'number')) {
          r.problem(item, `list ${name}: a value needs "in:", the words said`);
          continue;
        }
        list.push({ in: String(said.value), out: v.has('out') ? plain(v.get('out')!) : said.value, origin: r.origin(item) });
      }
      out.lists.set(name, { type: 'values', values: list, origin });
    } else if (fields.has('range')) {
      const range = plain(fields.get('range')!) as Record<string, unknown> | null;
      const from = Number(range?.from);
      const to = Number(range?.to);
      const step = range?.step === undefined ? 1 : Number(range.step);
      if (!Number.isFinite(from) || !Number.isFinite(to) || from > to || !(step > 0)) {
        r.problem(fields.get('range'), `list ${name}: "range" needs numbers from <= to (and a positive step)`);
        continue;
      }
      out.lists.set(name, { type: 'range', from, to, step, origin });
    } else if (fields.has('wildcard')) {
      out.lists.set(name, { type: 'wildcard', origin });
    } else {
      r.problem(value ?? key, `list ${name} needs "values", "range" or "wildcard"`);
    }
  }
}

function readNormalize(r: FileReader, node: YamlNode | null, out: LanguageData): void {
  const n = out.normalize;
  for (const [k, v] of r.entries(node)) {
    const value = plain(v);
    const words = (): string[] => {
      if (Array.isArray(value)) return value.map(String);
      r.problem(v, `normalize.${k} must be a list`);
      return [];
    };
    const numbers = () => {
      const o: Record<string, number> = {};
      if (value && typeof value === 'object' && !Array.isArray(value))
        for (const [w, x] of Object.entries(value))
          if (typeof x === 'number') o[w] = x;
          else r.problem(v, `normalize.${k} must map words to numbers`);
      return o;
    };
    switch (k) {
      case 'leading':
        n.leading = words();
        break;
      case 'trailing':
        n.trailing = words();
        break;
      case 'remarks':
        n.remarks = words();
        break;
      case 'not_alone':
        n.notAlone = words();
        break;
      case 'plural_keep':
        n.pluralKeep = words();
        break;
      case 'collective':
        n.collective = words();
        break;
      case 'units':
        n.units = numbers();
        break;
      case 'tens':
        n.tens = numbers();
        break;
      case 'fractions':
        n.fractions = numbers();
        break;
      case 'hundred':
        n.hundred = String(value);
        break;
      case 'point':
        n.point = String(value);
        break;
      case 'and':
        n.and = String(value);
        break;
      case 'contractions':
        n.contractions = [];
        for (const pair of Array.isArray(value) ? value : []) {
          if (!Array.isArray(pair) || pair.length !== 2) {
            r.problem(v, 'normalize.contractions: each entry is [pattern, replacement]');
            continue;
          }
          try {
            new RegExp(String(pair[0]));
            n.contractions.push([String(pair[0]), String(pair[1])]);
          } catch (err) {
            r.problem(v, `normalize.contractions: bad pattern ${JSON.stringify(pair[0])}: ${(err as Error).message}`);
          }
        }
        break;
      case 'plural_rules':
        n.pluralRules = [];
        for (const rule of Array.isArray(value) ? value : []) {
          const x = rule as Record<string, unknown>;
          if (typeof x?.suffix !== 'string') {
            r.problem(v, 'normalize.plural_rules: each rule needs "suffix"');
            continue;
          }
          n.pluralRules.push({
            suffix: x.suffix,
            replace: typeof x.replace === 'string' ? x.replace : '',
            minLength: typeof x.min_length === 'number' ? x.min_length : x.suffix.length + 2,
          });
        }
        break;
      case 'misspellings':
        // `word: [wrong, wrong]` in the file; looked up wrong -> word.
        if (value && typeof value === 'object' && !Array.isArray(value)) {
          for (const [word, wrongs] of Object.entries(value))
            for (const w of Array.isArray(wrongs) ? wrongs : [wrongs]) n.misspellings[String(w).toLowerCase()] = word.toLowerCase();
        } else r.problem(v, 'normalize.misspellings must map a word to its misspellings');
        break;
      default:
        r.problem(v, `normalize.${k} is not a known setting`);
    }
  }
}

const TOP_LEVEL = new Set(['language', 'intents', 'lists', 'expansion_rules', 'skip_words', 'normalize', 'responses']);

export function readSentenceFile(file: string, text: string, out: LanguageData): void {
  const r = new FileReader(file, out);
  const doc = parseDocument(text, { lineCounter: r.lines, uniqueKeys: true });
  if (doc.errors.length) {
    for (const e of doc.errors) out.problems.push({ file, line: e.linePos?.[0].line ?? 1, reason: e.message.split('\n')[0] });
    return;
  }
  if (doc.contents === null) return;
  if (!isMap(doc.contents)) {
    r.problem(doc.contents, 'a sentence file is a map with "intents", "lists" or "expansion_rules"');
    return;
  }
  for (const [k, v, key] of r.entries(doc.contents)) {
    if (!TOP_LEVEL.has(k)) r.problem(key, `"${k}" is not a sentence-file section (known: ${[...TOP_LEVEL].join(', ')})`);
    else if (k === 'intents') readIntents(r, v, out);
    else if (k === 'lists') readLists(r, v, out);
    else if (k === 'normalize') readNormalize(r, v, out);
    else if (k === 'responses') readResponses(v, file, (n) => r.line(n), out.responses, out.problems);
    else if (k === 'skip_words') out.normalize.skipWords.push(...r.strings(v, 'skip_words').map((s) => s.text.toLowerCase()));
    else if (k === 'expansion_rules') {
      for (const [name, tpl, rkey] of r.entries(v)) {
        if (isScalar(tpl) && typeof tpl.value === 'string') out.rules.set(name, { template: tpl.value, origin: r.origin(tpl) });
        else r.problem(tpl ?? rkey, `expansion rule ${name} must be a template string`);
      }
    }
  }
}

/** The YAML files of one folder, sorted; a missing folder is a problem. */
function filesOf(dir: string, problems: Problem[]): string[] {
  try {
    if (!statSync(dir).isDirectory()) {
      problems.push({ file: dir, line: 1, reason: 'not a folder of sentence files' });
      return [];
    }
    return readdirSync(dir)
      .filter((f) => /\.ya?ml$/i.test(f))
      .sort()
      .map((f) => join(dir, f));
  } catch (err) {
    problems.push({ file: dir, line: 1, reason: `cannot read the sentence folder: ${(err as Error).message}` });
    return [];
  }
}

/** Every file of the folders, in order (shipped first, then the user's). */
export function loadLanguage(dirs: string[]): LanguageData {
  const out: LanguageData = {
    data: [],
    lists: new Map(),
    rules: new Map(),
    responses: new Map(),
    normalize: structuredClone(EMPTY_NORMALIZE),
    problems: [],
    files: [],
  };
  for (const dir of dirs) {
    for (const file of filesOf(dir, out.problems)) {
      out.files.push(file);
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (err) {
        out.problems.push({ file, line: 1, reason: `cannot read: ${(err as Error).message}` });
        continue;
      }
      readSentenceFile(file, text, out);
    }
  }
  return out;
}
