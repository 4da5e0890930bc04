// The names people give places and devices (areas, floors, a device's own name, aliases): cleaned as device text
// is (no control or invisible characters, one line), capped, and compared as they are said. Shared by the home's
// stores and their setters, so a hostile name typed or imported is cleaned the same way everywhere.
import { slug, shortHash } from '../../util/slug.js';
import { cleanDeviceText } from '../device-text.js';

/** Longest area, floor or device name kept. */
export const MAX_PLACE_NAME = 60;
/** Most aliases per area, floor or device. */
export const MAX_ALIASES = 10;

/** A problem with a value a person gave: the field it was in and what was wrong. */
export class HomeError extends Error {
  constructor(
    readonly field: string,
    message: string,
    /** not_found: the thing named does not exist; conflict: it would take what another has. */
    readonly code: 'bad_value' | 'not_found' | 'conflict' = 'bad_value',
  ) {
    super(`${field}: ${message}`);
    this.name = 'HomeError';
  }
}

/** A name cleaned and capped; throws a HomeError naming the field when nothing is left. */
export function placeName(field: string, text: unknown): string {
  if (typeof text !== 'string') throw new HomeError(field, `must be text, got ${text === null ? 'null' : typeof text}`);
  // A slash is the topic path's separator: it is not part of a name people say.
  const clean = cleanDeviceText(text.replace(/\//g, ' '), MAX_PLACE_NAME);
  if (!clean || !/[\p{L}\p{N}]/u.test(clean)) throw new HomeError(field, `${JSON.stringify(text.slice(0, 40))} has no letters or digits to say`);
  return clean;
}

/** Aliases cleaned, deduplicated as said, at most MAX_ALIASES. */
export function aliasList(field: string, list: unknown): string[] {
  if (!Array.isArray(list)) throw new HomeError(field, 'must be a list of names');
  if (list.length > MAX_ALIASES) throw new HomeError(field, `at most ${MAX_ALIASES} aliases, got ${list.length}`);
  const out = new Map<string, string>();
  for (const [i, a] of list.entries()) {
    const name = placeName(`${field}[${i}]`, a);
    out.set(saidAs(name), name);
  }
  return [...out.values()];
}

/** A name as it is said: no case, accents or punctuation, one space between words. */
export function saidAs(name: string): string {
  // Most names are ASCII, where NFKD and the marks change nothing: the same result without them (10,000 names a rebuild).
  if (ASCII.test(name))
    return name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, ' ')
      .trim();
  return name
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

const ASCII = /^[\x00-\x7f]*$/;

/** The id a place is stored by: its name's slug (a hash when the name has no ASCII letters). */
export function placeId(name: string): string {
  return slug(name).slice(0, 60) || `p_${shortHash(saidAs(name))}`;
}
