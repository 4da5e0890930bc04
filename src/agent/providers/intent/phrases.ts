// A phrase list: phrases of one or more tokens, looked up by their first token,
// each mapping to one value. Names, areas and every list of the sentence data
// are one of these, so matching a slot is a map look-up and a few compares.
import type { Token } from './normalize.js';

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

export class PhraseIndex<T> {
  private byFirst = new Map<string, Array<{ keys: string[]; value: T }>>();

  constructor(
    private readonly keysOf: (text: string) => string[],
    private readonly merge?: (a: T, b: T) => T,
  ) {}

  add(text: string, value: T, joinedVariant = false): void {
    const keys = this.keysOf(text);
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

  /** Is this exact phrase (as keys) in the list? */
  has(keys: string[]): boolean {
    return !!this.byFirst.get(keys[0])?.some((p) => p.keys.length === keys.length && p.keys.every((k, i) => k === keys[i]));
  }

  /** The value of this exact phrase (as keys), if it is in the list. */
  get(keys: string[]): T | undefined {
    return this.byFirst.get(keys[0])?.find((p) => p.keys.length === keys.length && p.keys.every((k, i) => k === keys[i]))?.value;
  }

  /** Add a phrase already in tokens (merged with the same phrase's value). */
  addKeys(keys: string[], value: T): void {
    if (!keys.length || keys.length > MAX_PHRASE_WORDS) return;
    this.put(keys, value);
  }

  /** First tokens of every phrase. */
  firsts(): Iterable<string> {
    return this.byFirst.keys();
  }

  /** Every token of every phrase. */
  *words(): Iterable<string> {
    for (const list of this.byFirst.values()) for (const p of list) yield* p.keys;
  }

  /** Every phrase (its tokens joined) with its value. */
  *phrases(): Iterable<[string, T]> {
    for (const list of this.byFirst.values()) for (const p of list) yield [p.keys.join(' '), p.value];
  }

  *values(): Iterable<T> {
    for (const list of this.byFirst.values()) for (const p of list) yield p.value;
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
