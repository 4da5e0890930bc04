// Reading tool results back: the state lines `get_state` and read tools return,
// and the outcome prefixes of the pipeline (`confirmed:`, `unconfirmed:`,
// `needs approval:`, `not allowed:`, `failed:`).

/** One `"Name" (id, area "X"): part, part; updated ...; online.` line. */
export interface StateLine {
  name: string;
  id: string;
  area?: string;
  /** `on`, `brightness 180 of 254`, `mode heat`, `21.3 °C` ... */
  parts: string[];
  noState: boolean;
  offline: boolean;
}

export type Outcome = 'confirmed' | 'unconfirmed' | 'needs_approval' | 'not_allowed' | 'failed' | 'duplicate' | 'other';

/** The outcome a result text states, and the text after its prefix. */
export function outcomeOf(text: string): { outcome: Outcome; rest: string } {
  const t = text.trim();
  if (/^(confirmed|unconfirmed|still running|failed|denied|interrupted|cancelled): request \S+ was already handled/.test(t))
    return { outcome: 'duplicate', rest: t };
  const prefixes: Array<[string, Outcome]> = [
    ['confirmed:', 'confirmed'],
    ['unconfirmed:', 'unconfirmed'],
    ['needs approval:', 'needs_approval'],
    ['not allowed:', 'not_allowed'],
    ['failed:', 'failed'],
  ];
  for (const [p, outcome] of prefixes) if (t.startsWith(p)) return { outcome, rest: t.slice(p.length).trim() };
  if (/^not allowed\b/.test(t)) return { outcome: 'not_allowed', rest: '' };
  return { outcome: 'other', rest: t };
}

/** Index just past a JSON string starting at `start` (which must be `"`), or -1. */
function jsonStringEnd(text: string, start: number): number {
  if (text[start] !== '"') return -1;
  for (let i = start + 1; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === '"') return i + 1;
  }
  return -1;
}

function readJsonString(text: string, start: number): { value: string; end: number } | undefined {
  const end = jsonStringEnd(text, start);
  if (end < 0) return undefined;
  try {
    return { value: JSON.parse(text.slice(start, end)) as string, end };
  } catch {
    return undefined;
  }
}

/** Split on `sep` outside JSON strings. */
export function splitOutside(text: string, sep: string): string[] {
  const out: string[] = [];
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '"') {
      const end = jsonStringEnd(text, i);
      if (end < 0) break;
      i = end - 1;
    } else if (text.startsWith(sep, i)) {
      out.push(text.slice(from, i));
      from = i + sep.length;
      i += sep.length - 1;
    }
  }
  out.push(text.slice(from));
  return out;
}

export function parseStateLine(line: string): StateLine | undefined {
  const text = line.trim().replace(/\s*\(reported [^()]* after the command\)\s*$/, '');
  const name = readJsonString(text, 0);
  if (!name || !text.startsWith(' (', name.end)) return undefined;
  let i = name.end + 2;
  const idEnd = text.slice(i).search(/[,)]/);
  if (idEnd < 0) return undefined;
  const id = text.slice(i, i + idEnd);
  i += idEnd;
  let area: string | undefined;
  if (text.startsWith(', area ', i)) {
    const a = readJsonString(text, i + 7);
    if (!a) return undefined;
    area = a.value;
    i = a.end;
  }
  if (!text.startsWith('): ', i)) return undefined;
  const body = text.slice(i + 3).replace(/\.\s*$/, '');
  const segments = splitOutside(body, '; ');
  const head = segments[0];
  const offline = segments.slice(1).some((s) => s.startsWith('OFFLINE'));
  if (head === 'no state reported yet') return { name: name.value, id, area, parts: [], noState: true, offline };
  return {
    name: name.value,
    id,
    area,
    parts: splitOutside(head, ', ')
      .map((p) => p.trim())
      .filter(Boolean),
    noState: false,
    offline,
  };
}

/** `brightness 180 of 254` -> {label: 'brightness', value: '180 of 254'} for known attribute labels. */
export function attribute(parts: string[], label: string): string | undefined {
  const p = parts.find((x) => x.startsWith(`${label} `));
  return p?.slice(label.length + 1);
}

/** A value as shown: quoted device text unquoted. */
export function unquote(value: string): string {
  const s = readJsonString(value.trim(), 0);
  return s && s.end === value.trim().length ? s.value : value;
}
