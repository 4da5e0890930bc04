// Utterances, template words and device names all become the same tokens:
// lowercase ASCII words, accents folded, punctuation gone, skip words ("the",
// "please") dropped, contractions expanded, plurals singularised (with the
// plural remembered), known misspellings corrected and numbers - digits or
// words - turned into number tokens. Matching compares these tokens, so
// whatever rule applies to one side applies to the other. Every word list here
// comes from the language's sentence data (`normalize:` in _common.yaml): no
// language is named in code.

export interface Token {
  /** The matching key: a singular word, or `#<value>` for a number. */
  w: string;
  /** The word was a plural ("lights"). */
  plural: boolean;
  /** Set for a number token. */
  num?: number;
}

/** The `normalize:` block of a language's data, as loaded. */
export interface NormalizeData {
  /** Words that never matter for meaning (hassil's skip_words, single words). */
  skipWords: string[];
  /** Polite openings and closings stripped from the ends of an utterance. */
  leading: string[];
  trailing: string[];
  /**
   * Remarks that may open a command ("it's cold, turn the heating up to 23"): the rest is tried on its own
   * when the whole says nothing that can be done.
   */
  remarks: string[];
  /** [pattern, replacement] regular expressions applied to the lowercased text. */
  contractions: Array<[string, string]>;
  /** Number words: units (0..19), tens (20..90), and the words for hundred/point/and. */
  units: Record<string, number>;
  tens: Record<string, number>;
  hundred?: string;
  point?: string;
  and?: string;
  /** Words after a number that add a fraction ("and a half": 0.5). */
  fractions: Record<string, number>;
  /** Words that are not numbers when alone ("oh"). */
  notAlone: string[];
  /** Plural endings: keep words ending so, else the first rule whose suffix fits. */
  pluralKeep: string[];
  pluralRules: Array<{ suffix: string; replace: string; minLength: number }>;
  /** Words that mean many as they are ("lighting"): said, they count as a plural. */
  collective: string[];
  /** A word a person types or a recogniser hears wrong -> the word meant (exact, never fuzzy). */
  misspellings: Record<string, string>;
}

export const EMPTY_NORMALIZE: NormalizeData = {
  skipWords: [],
  leading: [],
  trailing: [],
  remarks: [],
  contractions: [],
  units: {},
  tens: {},
  fractions: {},
  notAlone: [],
  pluralKeep: [],
  pluralRules: [],
  collective: [],
  misspellings: {},
};

export class Normalizer {
  private readonly drop: Set<string>;
  private readonly collective: Set<string>;
  private readonly leading: string[][];
  private readonly trailing: string[][];
  private readonly remarks: Token[][];
  private readonly contractions: Array<[RegExp, string]>;

  constructor(readonly data: NormalizeData) {
    this.drop = new Set(data.skipWords);
    this.collective = new Set(data.collective ?? []);
    const split = (p: string) => this.clean(p).split(' ').filter(Boolean);
    this.contractions = data.contractions.map(([re, to]) => [new RegExp(re, 'g'), to]);
    // Longest first: "right now" before "now".
    const longest = (a: string[], b: string[]) => b.length - a.length;
    this.leading = data.leading
      .map(split)
      .filter((p) => p.length)
      .sort(longest);
    this.remarks = data.remarks
      .map((p) => this.tokenize(p))
      .filter((p) => p.length)
      .sort((a, b) => b.length - a.length);
    this.trailing = data.trailing
      .map(split)
      .filter((p) => p.length)
      .sort(longest);
  }

  /** Singular form of a word; `plural` says whether it changed. */
  singular(word: string): { w: string; plural: boolean } {
    if (/\d/.test(word)) return { w: word, plural: false };
    if (this.collective.has(word)) return { w: word, plural: true };
    if (this.data.pluralKeep.some((k) => word.endsWith(k))) return { w: word, plural: false };
    for (const r of this.data.pluralRules) {
      if (word.length >= r.minLength && word.endsWith(r.suffix)) return { w: word.slice(0, word.length - r.suffix.length) + r.replace, plural: true };
    }
    return { w: word, plural: false };
  }

  /** Lowercase, fold accents, expand contractions and unit signs, drop punctuation. */
  clean(text: string): string {
    let s = text
      .normalize('NFKD')
      .replace(/[\u0300-\u036f]/g, '')
      .toLowerCase();
    s = s.replace(/[\u2018\u2019\u02bc`\u00b4]/g, "'");
    for (const [re, to] of this.contractions ?? []) s = s.replace(re, to);
    s = s
      .replace(/(\d),(\d)/g, '$1.$2')
      .replace(/%/g, ' percent ')
      .replace(/\u00b0\s*([cf])\b/g, ' degree ')
      .replace(/\u00b0/g, ' degree ')
      .replace(/(\d)\s*(c|f|deg|degs)\b/g, '$1 degree ')
      .replace(/(\d)\s*k\b/g, '$1 kelvin ')
      .replace(/(\d)\.(?!\d)/g, '$1 ')
      .replace(/(^|[^\d])\.(\d)/g, '$1 0.$2')
      .replace(/[^a-z0-9.]+/g, ' ')
      .replace(/(^|\s)\.+|\.+(\s|$)/g, ' ')
      .replace(/([a-z])\.+([a-z])/g, '$1 $2');
    return s.trim();
  }

  private numberAt(words: string[], i: number): { value: number; next: number } | undefined {
    const { units, tens } = this.data;
    const w = words[i];
    if (/^\d+(\.\d+)?$/.test(w)) return { value: Number(w), next: i + 1 };
    let j = i;
    let value: number | undefined;
    const unit = (x: string | undefined) => (x !== undefined && Object.hasOwn(units, x) ? units[x] : undefined);
    const ten = (x: string | undefined) => (x !== undefined && Object.hasOwn(tens, x) ? tens[x] : undefined);
    if (ten(words[j]) !== undefined) {
      value = ten(words[j++])!;
      const u = unit(words[j]);
      if (u !== undefined && u > 0 && u < 10) {
        value += u;
        j++;
      }
    } else if (unit(words[j]) !== undefined && !this.data.notAlone.includes(words[j])) {
      value = unit(words[j++])!;
    }
    if (value === undefined) return undefined;
    if (this.data.hundred && words[j] === this.data.hundred) {
      value *= 100;
      j++;
      if (words[j] === this.data.and && (ten(words[j + 1]) !== undefined || unit(words[j + 1]) !== undefined)) j++;
      const rest = ten(words[j]) !== undefined || unit(words[j]) !== undefined ? this.numberAt(words, j) : undefined;
      if (rest && rest.value < 100) {
        value += rest.value;
        j = rest.next;
      }
    }
    if (this.data.point && words[j] === this.data.point && unit(words[j + 1]) !== undefined) {
      let digits = '';
      j++;
      for (let u = unit(words[j]); u !== undefined && u < 10; u = unit(words[j])) {
        digits += String(u);
        j++;
      }
      value = Number(`${value}.${digits}`);
    }
    // "nineteen and a half".
    for (const [phrase, add] of Object.entries(this.data.fractions)) {
      const p = phrase.split(' ');
      if (p.every((w, k) => words[j + k] === w)) {
        value += add;
        j += p.length;
        break;
      }
    }
    return { value, next: j };
  }

  private stripEnds(words: string[]): string[] {
    let out = words;
    for (let changed = true; changed; ) {
      changed = false;
      for (const p of this.leading) {
        if (out.length > p.length && p.every((w, k) => out[k] === w)) {
          out = out.slice(p.length);
          changed = true;
        }
      }
      for (const p of this.trailing) {
        if (out.length > p.length && p.every((w, k) => out[out.length - p.length + k] === w)) {
          out = out.slice(0, out.length - p.length);
          changed = true;
        }
      }
    }
    return out;
  }

  /**
   * Text -> tokens. `utterance` strips polite openings and closings and
   * corrects known misspellings (not wanted for names: a device may well be
   * called "Now playing").
   */
  tokenize(text: string, utterance = false): Token[] {
    let words = this.clean(text).split(' ').filter(Boolean);
    if (utterance) {
      words = words.map((w) => (Object.hasOwn(this.data.misspellings, w) ? this.data.misspellings[w] : w)).flatMap((w) => w.split(' '));
      words = this.stripEnds(words);
    }
    const out: Token[] = [];
    for (let i = 0; i < words.length; ) {
      const n = this.numberAt(words, i);
      if (n) {
        out.push({ w: `#${n.value}`, plural: false, num: n.value });
        i = n.next;
        continue;
      }
      const word = words[i++];
      if (this.drop.has(word)) continue;
      out.push(this.singular(word));
    }
    return out;
  }

  /** Where the command after an opening remark starts (0: no remark, or nothing after it). */
  afterRemark(tokens: Token[]): number {
    for (const r of this.remarks) if (tokens.length > r.length && r.every((t, i) => tokens[i].w === t.w)) return r.length;
    return 0;
  }

  /** Token keys of a phrase (a name, an alias, a template word). */
  keys(text: string): string[] {
    return this.tokenize(text).map((t) => t.w);
  }
}
