// Text chosen by whoever publishes on the broker (device names, areas, units)
// is data, not instructions. Before it is stored or shown to a model it loses
// every character that is invisible or changes how text reads: controls,
// format characters (bidi overrides, zero-width characters, the Unicode "tag"
// characters that can spell hidden instructions), private-use characters,
// line and paragraph separators and variation selectors; whitespace runs
// become one space and the length is capped.

/** The characters that go, as a character-class body (one list for one line and for many). */
const HIDDEN = String.raw`\p{Cc}\p{Cf}\p{Co}\p{Zl}\p{Zp}\u{FE00}-\u{FE0F}\u{E0100}-\u{E01EF}`;

export const INVISIBLE = new RegExp(`[${HIDDEN}]`, 'gu');

/** One clean line of at most `max` characters (cut text ends in `…`); '' when nothing is left. */
export function cleanUntrustedText(text: string | undefined, max: number): string {
  if (!text) return '';
  const clean = text.replace(INVISIBLE, ' ').replace(/\s+/g, ' ').trim();
  if (clean.length <= max) return clean;
  // Cut on a code point boundary, never inside a surrogate pair.
  return `${Array.from(clean)
    .slice(0, max - 1)
    .join('')}…`;
}

const INVISIBLE_BUT_LAYOUT = new RegExp(String.raw`(?![\n\t])[${HIDDEN}]`, 'gu');

/** Text of many lines (a tool's answer): the same characters go, but line breaks and tabs stay. */
export function cleanUntrustedLines(text: string): string {
  return text.replace(/\r\n?/g, '\n').replace(INVISIBLE_BUT_LAYOUT, '');
}
