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

/** Edit distance with transpositions (optimal string alignment), giving up above `max`. */
export function distance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  const w = b.length + 1;
  let prev2 = new Uint8Array(w);
  let prev = new Uint8Array(w);
  let cur = new Uint8Array(w);
  for (let j = 0; j < w; j++) prev[j] = j;
  for (let i = 1; i <= a.length; i++) {
    cur[0] = i;
    let best = i;
    for (let j = 1; j < w; j++) {
      const cost = a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1;
      let d = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, prev2[j - 2] + 1);
      cur[j] = d;
      if (d < best) best = d;
    }
    if (best > max) return max + 1;
    [prev2, prev, cur] = [prev, cur, prev2];
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
  // How close each said word is to each name word, once per name word; then only the entities those words name.
  const scores = new Map<Entity, number[]>();
  for (const [o, named] of v.byWord) {
    const c = words.map((w) =>
      o === w
        ? 3
        : distance(w, o, 2) <= allowed(w)
          ? 2
          : o.length >= 4 && w.length >= 4 && (o.startsWith(w.slice(0, 4)) || w.startsWith(o.slice(0, 4)))
            ? 1
            : 0,
    );
    if (!c.some((x) => x > 0)) continue;
    for (const e of named) {
      const best =
        scores.get(e) ??
        scores
          .set(
            e,
            words.map(() => 0),
          )
          .get(e)!;
      for (let i = 0; i < c.length; i++) if (c[i] > best[i]) best[i] = c[i];
    }
  }
  const scored = [...scores].map(([e, best]) => ({ e, score: best.reduce((a, b) => a + b, 0) }));
  scored.sort((a, b) => b.score - a.score || a.e.name.localeCompare(b.e.name));
  const top = scored.length ? scored[0].score : 0;
  return sortEntities(
    scored
      .filter((s) => s.score >= Math.max(1, top - 1))
      .slice(0, limit)
      .map((s) => s.e),
  );
}
