// Tool names under the kit's rules: [A-Za-z0-9_-], at most 58 characters (the
// `host__` prefix must fit the wire's 64), no `__`, no reserved name, unique
// across the set. A collision gets a suffix derived from the entity id, so the
// same home yields the same names on every start.
import { createHash } from 'node:crypto';

export const MAX_TOOL_NAME = 58;

/** Built-in tool names of the kit's runtime, and Hearth's own fixed tools. */
export const RESERVED_NAMES = new Set([
  'shell', 'bash', 'read_file', 'write_file', 'edit_file', 'list_files', 'list_dir', 'grep', 'glob', 'search',
  'web_search', 'web_fetch', 'fetch', 'todo_write', 'todo_read', 'think', 'memory',
  'dispatch_subagent', 'list_subagents', 'message_subagent', 'stop_subagent',
  'get_state', 'get_history', 'find_entities', 'get_camera_image',
]);

const NAME_RE = /^[A-Za-z0-9_-]{1,58}$/;

export function isValidToolName(name: string): boolean {
  return NAME_RE.test(name) && !name.includes('__') && !RESERVED_NAMES.has(name);
}

/** Lowercase ASCII slug: accents folded, everything else becomes `_`, no `__`. */
export function slug(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '_')
    .replace(/_+/g, '_')
    .replace(/-+/g, '-')
    .replace(/^[_-]+|[_-]+$/g, '');
}

export function shortHash(text: string, length = 6): string {
  return createHash('sha256').update(text).digest('hex').slice(0, length);
}

function fit(base: string, suffix: string): string {
  const room = MAX_TOOL_NAME - suffix.length;
  return `${base.slice(0, room).replace(/[_-]+$/, '')}${suffix}`;
}

/** A valid base name for a thing called `preferred`, falling back to `fallback` (an id). */
export function baseToolName(preferred: string, fallback: string): string {
  let base = slug(preferred) || slug(fallback) || `entity_${shortHash(fallback)}`;
  if (!/^[a-z]/.test(base)) base = `e_${base}`;
  base = fit(base, '');
  if (RESERVED_NAMES.has(base)) base = fit(base, '_device');
  return base;
}

/**
 * Assign unique names. `wanted` maps a stable key (entity id) to its base
 * name; keys are taken in sorted order, so the first keeps the plain name and
 * later ones get `_<hash of key>`.
 */
export function assignNames(wanted: Array<{ key: string; base: string }>, taken: Iterable<string> = []): Map<string, string> {
  const used = new Set(taken);
  const out = new Map<string, string>();
  for (const { key, base } of [...wanted].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))) {
    let name = base;
    for (let n = 6; used.has(name) || !isValidToolName(name); n += 2) {
      name = fit(base, `_${shortHash(key, n)}`);
      if (n > 40) throw new Error(`cannot find a unique tool name for ${key}`);
    }
    used.add(name);
    out.set(key, name);
  }
  return out;
}
