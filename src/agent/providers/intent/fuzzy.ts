// Bounded fuzzy matching, on names only: a word that is no word of any
// sentence or list ("ligth", "kitchn") may be a misheard or mistyped word of a
// device or area name, and is corrected to the one name word closest to it
// (one edit for short words, two for long ones; a tie is not guessed). Words
// the sentences use - verbs above all - are never changed: misspelled verbs
// are only corrected from the explicit list in the language's data.
import type { Entity } from '../../../devices/model.js';
import type { Token } from './normalize.js';
import { sortEntities } from './resolve.js';
import type { Vocabulary } from './vocabulary.js';

/** Edit distance with transpositions, giving up above `max`. */
export function distance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  const prev2: number[] = new Array(b.length + 1).fill(0);
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, prev2[j - 2] + 1);
      cur.push(d);
      best = Math.min(best, d);
    }
    if (best > max) return max + 1;
    prev2.splice(0, prev2.length, ...prev);
    prev = cur;
  }
  return prev[b.length];
}

function allowed(word: string): number {
  return word.length >= 7 ? 2 : word.length >= 4 ? 1 : 0;
}

/** The closest name word, when exactly one is closest and close enough. */
function closestWord(word: string, v: Vocabulary): string | undefined {
  const max = allowed(word);
  if (!max) return undefined;
  let best: string | undefined;
  let bestD = max + 1;
  let tie = false;
  for (const w of v.nameWords) {
    if (w.startsWith('#')) continue;
    const d = distance(word, w, max);
    if (d < bestD) {
      best = w;
      bestD = d;
      tie = false;
    } else if (d === bestD && w !== best) tie = true;
  }
  return best && !tie ? best : undefined;
}

/** The utterance with unknown words corrected to name words; undefined when nothing changed. */
export function correctNames(tokens: Token[], v: Vocabulary): Token[] | undefined {
  let changed = false;
  const out = tokens.map((t) => {
    if (t.num !== undefined || v.lang.words.has(t.w) || v.nameWords.has(t.w)) return t;
    const w = closestWord(t.w, v);
    if (!w) return t;
    changed = true;
    return { ...t, w };
  });
  return changed ? out : undefined;
}

/** Devices whose names come closest to words said of an unknown device (for "did you mean"). */
export function closestEntities(said: string, v: Vocabulary, limit = 3): Entity[] {
  const words = v.lang.normalizer.keys(said).filter((w) => !v.lang.words.has(w) || v.nameWords.has(w));
  if (!words.length) return [];
  const scored: Array<{ e: Entity; score: number }> = [];
  for (const e of v.entities) {
    const own = [...(v.classEntity.get(e.id)?.words ?? [])];
    let score = 0;
    for (const w of words) {
      let best = 0;
      for (const o of own) {
        if (o === w) best = Math.max(best, 3);
        else if (distance(w, o, 2) <= allowed(w)) best = Math.max(best, 2);
        else if (o.length >= 4 && w.length >= 4 && (o.startsWith(w.slice(0, 4)) || w.startsWith(o.slice(0, 4)))) best = Math.max(best, 1);
      }
      score += best;
    }
    if (score > 0) scored.push({ e, score });
  }
  scored.sort((a, b) => b.score - a.score || a.e.name.localeCompare(b.e.name));
  const top = scored.length ? scored[0].score : 0;
  return sortEntities(scored.filter((s) => s.score >= Math.max(1, top - 1)).slice(0, limit).map((s) => s.e));
}
