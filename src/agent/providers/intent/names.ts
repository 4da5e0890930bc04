// Device names and areas as they appear in answers. They come from device
// files or discovery and may be hostile: control and invisible characters go,
// whitespace collapses, length is capped. A sentence-case name ("Kitchen
// light") reads as "the kitchen light"; anything else keeps its spelling.
import { cleanDeviceText, readableName } from '../../../devices/device-text.js';
import type { Entity } from '../../../devices/model.js';
import type { Responses } from './responses.js';

export const MAX_NAME = 48;

/** Cleaned, capped, and lowercased when it is plain sentence case. */
export function spoken(text: string | undefined, max = MAX_NAME): string {
  // Read as the table and the page show it ("den_reading_light" is "Den reading light", said "den reading light");
  // other markup goes.
  const clean = readableName(cleanDeviceText(text, max)).replace(/[`*_<>[\]{}]/g, '');
  // A reading its device is named after says the name once: "Temperature Temperature" is "Temperature".
  const words = clean.split(' ');
  const half = words.length % 2 === 0 ? words.slice(0, words.length / 2).join(' ') : '';
  if (
    half &&
    half.toLowerCase() ===
      words
        .slice(words.length / 2)
        .join(' ')
        .toLowerCase()
  )
    return spoken(half, max);
  if (/^[A-Z][a-z]+(?:\s[a-z0-9][\w'-]*)*$/.test(clean.replace(/…$/, ''))) return clean[0].toLowerCase() + clean.slice(1);
  return clean || 'device';
}

/** Does the name already start with one of the language's `name_articles` ("the", "my")? */
function hasArticle(r: Responses, name: string): boolean {
  const first = name.split(/\s/, 1)[0].toLowerCase();
  return name.includes(' ') && r.say('name_articles').toLowerCase().split(/\s+/).includes(first);
}

/** "the kitchen light" (the `the_name` response; no second article if the name has one). */
export function theName(r: Responses, entity: Pick<Entity, 'name' | 'id'> | undefined): string {
  const name = spoken(entity?.name || entity?.id || r.say('word_device'));
  return hasArticle(r, name) ? name : r.say('the_name', { name });
}

/** A person (a presence tracker's name) as written, without an article: "Anna". */
export function personName(entity: Pick<Entity, 'name' | 'id'>): string {
  return cleanDeviceText(entity.name || entity.id, MAX_NAME).replace(/[`*_<>[\]{}]/g, '') || 'someone';
}

export function theArea(r: Responses, area: string): string {
  const name = spoken(area, 40);
  return hasArticle(r, name) ? name : r.say('the_name', { name });
}

/** First letter up. */
export function sentence(text: string): string {
  return text ? text[0].toUpperCase() + text.slice(1) : text;
}

/** "a, b or c" (plain; answers use the language's Responses.list) */
export function listOr(items: string[], word = 'or'): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} ${word} ${items[items.length - 1]}`;
}

/** Free text from a result (reasons, errors): cleaned and capped, no trailing full stop. */
export function resultText(text: string, max = 400): string {
  return cleanDeviceText(text, max).replace(/[.\s]+$/, '');
}
