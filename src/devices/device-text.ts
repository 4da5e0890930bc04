// Device-provided strings (names, areas, text states) are data, not
// instructions: control and invisible characters go (Unicode tags too: they can
// spell hidden text), whitespace collapses, length is capped. Discovery cleans
// with it; tools quote the result for a model.
import { cleanUntrustedText } from '../util/untrusted-text.js';

/** Strip control and invisible formatting characters, collapse whitespace, cap length. */
export function cleanDeviceText(text: string | undefined, max = 60): string {
  return cleanUntrustedText(text, max);
}

/**
 * A name written as a topic or a variable (`desk_fan`, `kids_room`) as its owner reads it: underscores are spaces,
 * and one all in lower case starts with a capital ("Desk fan", "Kids room"). A name written with spaces and
 * capitals ("Hue Color Lamp", "Lounge Lamp") is returned as it was written. The one place a source's name becomes
 * the words the table, the page and chat all use.
 */
export function readableName(text: string): string {
  if (!text.includes('_')) return text;
  const spaced = text.replace(/_+/g, ' ').replace(/\s+/g, ' ').trim();
  if (!spaced) return text;
  return spaced === spaced.toLowerCase() ? spaced[0]!.toUpperCase() + spaced.slice(1) : spaced;
}
