// Utterances, template words and device names all become the same tokens:
// lowercase ASCII words, accents folded, punctuation gone, filler words ("the",
// "please") dropped, contractions expanded, plurals singularised (with the
// plural remembered) and numbers - digits or words - turned into number tokens.
// Matching compares these tokens, so whatever rule applies to one side applies
// to the other.

export interface Token {
  /** The matching key: a singular word, or `#<value>` for a number. */
  w: string;
  /** The word was a plural ("lights"). */
  plural: boolean;
  /** Set for a number token. */
  num?: number;
}

/** Words that never matter for meaning. */
const DROP = new Set(['the', 'a', 'an', 'my', 'our', 'your', 'please', 'kindly', 'just', 'some']);

/** Polite openings and closings, stripped from the ends of an utterance. */
const LEADING: string[][] = [
  ['please'], ['hey'], ['hi'], ['hello'], ['ok'], ['okay'], ['so'], ['now'], ['hearth'],
  ['can', 'you'], ['could', 'you'], ['would', 'you'], ['will', 'you'],
  ['i', 'want', 'you', 'to'], ['i', 'would', 'like', 'you', 'to'], ['i', 'need', 'you', 'to'],
  ['i', 'want', 'to'], ['i', 'would', 'like', 'to'], ['go', 'ahead', 'and'], ['quickly'],
];
const TRAILING: string[][] = [['please'], ['for', 'me'], ['now'], ['right', 'now'], ['thanks'], ['thank', 'you'], ['thx']];

const CONTRACTIONS: Array<[RegExp, string]> = [
  [/\b(what|who|where|how|it|that|there|here|what)'s\b/g, '$1 is'],
  [/\b(what|who|where|how|they|we|you)'re\b/g, '$1 are'],
  [/\bcan't\b/g, 'can not'],
  [/\bwon't\b/g, 'will not'],
  [/\b(\w+)n't\b/g, '$1 not'],
  [/\bi'm\b/g, 'i am'],
  [/\bi'd\b/g, 'i would'],
  [/\blet's\b/g, 'let us'],
  [/'s\b/g, ''],
  [/'(d|ll|ve|re)\b/g, ''],
];

const UNITS: Record<string, number> = {
  zero: 0, oh: 0, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9,
  ten: 10, eleven: 11, twelve: 12, thirteen: 13, fourteen: 14, fifteen: 15, sixteen: 16, seventeen: 17,
  eighteen: 18, nineteen: 19,
};
const TENS: Record<string, number> = { twenty: 20, thirty: 30, forty: 40, fifty: 50, sixty: 60, seventy: 70, eighty: 80, ninety: 90 };

/** Singular form of a word; `plural` says whether it changed. */
export function singular(word: string): { w: string; plural: boolean } {
  if (word.length <= 3 || !word.endsWith('s') || /\d/.test(word)) return { w: word, plural: false };
  if (/(ss|us|is|ous)$/.test(word)) return { w: word, plural: false };
  if (word.length > 4 && word.endsWith('ies')) return { w: `${word.slice(0, -3)}y`, plural: true };
  if (/(ches|shes|xes|sses|zzes)$/.test(word)) return { w: word.slice(0, -2), plural: true };
  return { w: word.slice(0, -1), plural: true };
}

/** Lowercase, fold accents, expand contractions and unit signs, drop punctuation. */
export function cleanText(text: string): string {
  let s = text.normalize('NFKD').replace(/[\u0300-\u036f]/g, '').toLowerCase();
  s = s.replace(/[\u2018\u2019\u02bc`\u00b4]/g, "'");
  for (const [re, to] of CONTRACTIONS) s = s.replace(re, to);
  s = s
    .replace(/(\d),(\d)/g, '$1.$2')
    .replace(/%/g, ' percent ')
    .replace(/\u00b0\s*([cf])\b/g, ' degree ')
    .replace(/\u00b0/g, ' degree ')
    .replace(/(\d)\s*(c|f|deg|degs)\b/g, '$1 degree ')
    .replace(/(\d)\.(?!\d)/g, '$1 ')
    .replace(/(^|[^\d])\.(\d)/g, '$1 0.$2')
    .replace(/[^a-z0-9.]+/g, ' ')
    .replace(/(^|\s)\.+|\.+(\s|$)/g, ' ')
    .replace(/([a-z])\.+([a-z])/g, '$1 $2');
  return s.trim();
}

function numberAt(words: string[], i: number): { value: number; next: number } | undefined {
  const w = words[i];
  if (/^\d+(\.\d+)?$/.test(w)) return { value: Number(w), next: i + 1 };
  let j = i;
  let value: number | undefined;
  if (TENS[words[j]] !== undefined) {
    value = TENS[words[j++]];
    if (UNITS[words[j]] !== undefined && UNITS[words[j]] > 0 && UNITS[words[j]] < 10) value += UNITS[words[j++]];
  } else if (UNITS[words[j]] !== undefined && words[j] !== 'oh') {
    value = UNITS[words[j++]];
  }
  if (value === undefined) return undefined;
  if (words[j] === 'hundred') {
    value *= 100;
    j++;
    if (words[j] === 'and' && (TENS[words[j + 1]] !== undefined || UNITS[words[j + 1]] !== undefined)) j++;
    const rest = TENS[words[j]] !== undefined || UNITS[words[j]] !== undefined ? numberAt(words, j) : undefined;
    if (rest && rest.value < 100) {
      value += rest.value;
      j = rest.next;
    }
  }
  if (words[j] === 'point' && UNITS[words[j + 1]] !== undefined) {
    let digits = '';
    j++;
    while (UNITS[words[j]] !== undefined && UNITS[words[j]] < 10) digits += String(UNITS[words[j++]]);
    value = Number(`${value}.${digits}`);
  }
  return { value, next: j };
}

function stripEnds(words: string[]): string[] {
  let out = words;
  for (let changed = true; changed; ) {
    changed = false;
    for (const p of LEADING) {
      if (out.length > p.length && p.every((w, k) => out[k] === w)) {
        out = out.slice(p.length);
        changed = true;
      }
    }
    for (const p of TRAILING) {
      if (out.length > p.length && p.every((w, k) => out[out.length - p.length + k] === w)) {
        out = out.slice(0, out.length - p.length);
        changed = true;
      }
    }
  }
  return out;
}

/**
 * Text -> tokens. `utterance` strips polite openings and closings too (not
 * wanted for names: a device may well be called "Now playing").
 */
export function tokenize(text: string, utterance = false): Token[] {
  let words = cleanText(text).split(' ').filter(Boolean);
  if (utterance) words = stripEnds(words);
  const out: Token[] = [];
  for (let i = 0; i < words.length; ) {
    const n = numberAt(words, i);
    if (n) {
      out.push({ w: `#${n.value}`, plural: false, num: n.value });
      i = n.next;
      continue;
    }
    const word = words[i++];
    if (DROP.has(word)) continue;
    out.push(singular(word));
  }
  return out;
}

/** Token keys of a phrase (a name, an alias, a template word). */
export function phraseKeys(text: string): string[] {
  return tokenize(text).map((t) => t.w);
}
