// A small JSON path: `state`, `a.b[0].c`, `a['key with.dots']`, optional `$.`
// prefix. Enough for device payloads without a template language.

export type PathSegment = string | number;

export class JsonPathError extends Error {}

const cache = new Map<string, PathSegment[]>();

export function parseJsonPath(path: string): PathSegment[] {
  const hit = cache.get(path);
  if (hit) return hit;
  const segments: PathSegment[] = [];
  let i = path.startsWith('$') ? 1 : 0;
  if (path[i] === '.') i++;
  while (i < path.length) {
    const ch = path[i];
    if (ch === '[') {
      const close = path.indexOf(']', i);
      if (close < 0) throw new JsonPathError(`unclosed [ in "${path}"`);
      const inner = path.slice(i + 1, close).trim();
      const quoted = /^(['"])(.*)\1$/.exec(inner);
      if (quoted) segments.push(quoted[2]);
      else if (/^\d+$/.test(inner)) segments.push(Number(inner));
      else throw new JsonPathError(`"[${inner}]" in "${path}" must be an index or a quoted key`);
      i = close + 1;
      if (path[i] === '.') i++;
      continue;
    }
    let j = i;
    while (j < path.length && path[j] !== '.' && path[j] !== '[') j++;
    const key = path.slice(i, j);
    if (!key) throw new JsonPathError(`empty segment in "${path}"`);
    segments.push(key);
    i = path[j] === '.' ? j + 1 : j;
  }
  if (cache.size > 10_000) cache.clear();
  cache.set(path, segments);
  return segments;
}

/** The value at `path`, or undefined when any step is missing. */
export function readJsonPath(data: unknown, path: string): unknown {
  let cur = data;
  for (const seg of parseJsonPath(path)) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string | number, unknown>)[seg];
  }
  return cur;
}

/** Build `{a: {b: value}}` from `a.b` (for JSON commands). */
export function writeJsonPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const segs = parseJsonPath(path);
  let cur: Record<string | number, unknown> = target;
  segs.forEach((seg, idx) => {
    if (idx === segs.length - 1) {
      cur[seg] = value;
      return;
    }
    if (cur[seg] === null || typeof cur[seg] !== 'object') cur[seg] = typeof segs[idx + 1] === 'number' ? [] : {};
    cur = cur[seg] as Record<string | number, unknown>;
  });
}
