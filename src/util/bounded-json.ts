// JSON from devices, bounded. Anyone on the broker can publish anything, so
// every parser of device data (state payloads, discovery configs, Zigbee2MQTT
// bridge/devices, Homie descriptions, template values) goes through here:
// the text is capped in size, its nesting is measured before it is parsed
// (V8 parses deep JSON fine, but every recursive walk after it -- stringify,
// schema checks, converters -- overflows the stack), and turning a value back
// into text stops at a length instead of building it all first.

/** Deepest nesting accepted anywhere in device JSON (real payloads use a handful of levels; Home Assistant's parser stops at 1024). */
export const MAX_JSON_DEPTH = 64;

/**
 * Deepest nesting of a request body (HTTP, MCP, the control socket, Wyoming). Deeper than the tools accept, so
 * that arguments too deep for a tool still reach it and are refused there with an audit row; shallow enough
 * that no walk over the value can overflow the stack.
 */
export const MAX_BODY_DEPTH = 400;

export type JsonProblem = 'oversized' | 'too_deep' | 'not_json';

export class JsonLimitError extends Error {
  constructor(
    readonly reason: JsonProblem,
    message: string,
  ) {
    super(message);
    this.name = 'JsonLimitError';
  }
}

/** How deep `[` and `{` nest in JSON text (strings skipped), without parsing it; stops counting once past `stopAbove`. */
export function jsonDepth(text: string, stopAbove = Infinity): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) {
        max = depth;
        if (max > stopAbove) return max;
      }
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

export interface JsonLimits {
  /** Most characters of text accepted. */
  maxChars: number;
  /** Deepest nesting accepted (default MAX_JSON_DEPTH). */
  maxDepth?: number;
}

/** JSON.parse within limits; a JsonLimitError names what was wrong. */
export function parseBoundedJson(text: string, limits: JsonLimits): unknown {
  if (text.length > limits.maxChars) {
    throw new JsonLimitError('oversized', `${text.length} characters is over the ${limits.maxChars}-character limit`);
  }
  const maxDepth = limits.maxDepth ?? MAX_JSON_DEPTH;
  if (jsonDepth(text, maxDepth) > maxDepth) {
    throw new JsonLimitError('too_deep', `JSON nested deeper than ${maxDepth} levels`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    const head = text.slice(0, 40);
    throw new JsonLimitError('not_json', `not JSON: ${JSON.stringify(text.length > 40 ? `${head}...` : head)}`);
  }
}

/**
 * A value as JSON text cut at `maxChars` characters (what
 * `JSON.stringify(v).slice(0, maxChars)` gives), built piece by piece so a huge or deep value costs no
 * more than the cap; nesting past `maxDepth` prints as `...`.
 */
export function stringifyBounded(value: unknown, maxChars: number, maxDepth = MAX_JSON_DEPTH): string {
  let out = '';
  const full = () => out.length >= maxChars;
  const put = (s: string) => {
    out += s.length > maxChars - out.length ? s.slice(0, maxChars - out.length + 1) : s;
  };
  const walk = (v: unknown, depth: number): void => {
    if (full()) return;
    if (v === null || v === undefined || typeof v === 'function' || typeof v === 'symbol') return put('null');
    if (typeof v === 'number') return put(Number.isFinite(v) ? String(v) : 'null');
    if (typeof v === 'boolean') return put(v ? 'true' : 'false');
    if (typeof v === 'bigint') return put(String(v));
    if (typeof v === 'string') return put(JSON.stringify(v.length > maxChars ? v.slice(0, maxChars) : v));
    if (depth >= maxDepth) return put('"..."');
    if (Array.isArray(v)) {
      put('[');
      for (let i = 0; i < v.length && !full(); i++) {
        if (i) put(',');
        walk(v[i], depth + 1);
      }
      return put(']');
    }
    put('{');
    let first = true;
    for (const key in v as Record<string, unknown>) {
      if (full()) break;
      if (!Object.hasOwn(v, key)) continue;
      if (!first) put(',');
      first = false;
      put(`${JSON.stringify(key.length > maxChars ? key.slice(0, maxChars) : key)}:`);
      walk((v as Record<string, unknown>)[key], depth + 1);
    }
    put('}');
  };
  walk(value, 0);
  return out.slice(0, maxChars);
}
