// Glob patterns of the policy table: `*` any run of characters, `?` one
// character, `|` separates alternatives (`garage|door|gate`). Everything else
// is literal. Compiled once into an anchored RegExp.

export type Matcher = (value: string) => boolean;

const MATCH_ALL: Matcher = () => true;

function globBody(pattern: string): string {
  let out = '';
  for (const ch of pattern) {
    if (ch === '*') out += '.*';
    else if (ch === '?') out += '.';
    else out += ch.replace(/[.+^${}()|[\]\\/-]/g, '\\$&');
  }
  return out;
}

export function isWildcard(pattern: string): boolean {
  return /[*?|]/.test(pattern);
}

/** Compile a glob (with `|` alternatives) to a predicate. */
export function compileGlob(pattern: string, caseInsensitive = false): Matcher {
  const alternatives = pattern.split('|');
  if (alternatives.includes('*')) return MATCH_ALL;
  if (!isWildcard(pattern)) {
    if (caseInsensitive) {
      const lower = pattern.toLowerCase();
      return (v) => v.toLowerCase() === lower;
    }
    return (v) => v === pattern;
  }
  const re = new RegExp(`^(?:${alternatives.map(globBody).join('|')})$`, caseInsensitive ? 'is' : 's');
  return (v) => re.test(v);
}
