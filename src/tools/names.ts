// Tool names under the kit's rules: [A-Za-z0-9_-], at most 58 characters (the
// `host__` prefix must fit the wire's 64), no `__`, no reserved name, unique
// across the set. A collision gets a suffix derived from the entity id. Names
// once given are remembered (src/devices/entity-names.ts): an entity keeps its
// name, and a newcomer (say a discovered lock that calls itself "Front door
// lock") gets a suffixed one, never a name another entity holds.
import { shortHash, slug } from '../util/slug.js';

export { shortHash, slug };

export const MAX_TOOL_NAME = 58;

/** Built-in tool names of the kit's runtime, and Hearth's own fixed tools. */
export const RESERVED_NAMES = new Set([
  'shell',
  'bash',
  'read_file',
  'write_file',
  'edit_file',
  'list_files',
  'list_dir',
  'grep',
  'glob',
  'search',
  'web_search',
  'web_fetch',
  'fetch',
  'todo_write',
  'todo_read',
  'think',
  'memory',
  'dispatch_subagent',
  'list_subagents',
  'message_subagent',
  'stop_subagent',
  'get_state',
  'get_history',
  'get_audit',
  'explain_policy',
  'find_entities',
  'get_camera_image',
]);

const NAME_RE = /^[A-Za-z0-9_-]{1,58}$/;

export function isValidToolName(name: string): boolean {
  return NAME_RE.test(name) && !name.includes('__') && !RESERVED_NAMES.has(name);
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

/** Names already given, remembered across restarts (src/devices/entity-names.ts). */
export interface NameMemory {
  nameOf(key: string): { name: string; base: string } | undefined;
  holderOf(name: string): string | undefined;
  /** Throws when another key holds the name (another process may have given it meanwhile). */
  remember(key: string, name: string, base: string): void;
}

function suffixed(base: string, key: string, taken: (name: string) => boolean): string {
  let name = base;
  for (let n = 6; taken(name) || !isValidToolName(name); n += 2) {
    name = fit(base, `_${shortHash(key, n)}`);
    if (n > 40) throw new Error(`cannot find a unique tool name for ${key}`);
  }
  return name;
}

/**
 * Assign unique names. `wanted` maps a stable key (entity id) to its base
 * name. Without a memory, keys are taken in sorted order, so the first keeps
 * the plain name and later ones get `_<hash of key>`. With one, a key keeps
 * the name it was given before, a name once given is never another key's,
 * and newcomers are named in the order given (device files first, then
 * discovered entities in the order first seen).
 */
export function assignNames(
  wanted: Array<{ key: string; base: string }>,
  taken: Iterable<string> = [],
  memory?: NameMemory,
  /** Keys that keep the name they were given even though their base changed (a device whose move waits for a person). */
  hold?: (key: string) => boolean,
): Map<string, string> {
  const used = new Set(taken);
  const out = new Map<string, string>();
  if (!memory) {
    for (const { key, base } of [...wanted].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))) {
      const name = suffixed(base, key, (n) => used.has(n));
      used.add(name);
      out.set(key, name);
    }
    return out;
  }
  // A key keeps its name while its base is the same (a renamed entity is named anew), or while it is held.
  for (const { key, base } of wanted) {
    const kept = memory.nameOf(key);
    if (kept && (kept.base === base || hold?.(key)) && isValidToolName(kept.name) && !used.has(kept.name)) {
      used.add(kept.name);
      out.set(key, kept.name);
    }
  }
  for (const { key, base } of wanted) {
    if (out.has(key)) continue;
    const taken = (n: string) => {
      if (used.has(n)) return true;
      const holder = memory.holderOf(n);
      return holder !== undefined && holder !== key;
    };
    let name = suffixed(base, key, taken);
    for (let attempt = 0; ; attempt++) {
      try {
        memory.remember(key, name, base);
        break;
      } catch (err) {
        // Another process named another entity so a moment ago: take the next suffix.
        if (attempt > 3) throw err;
        used.add(name);
        name = suffixed(base, key, taken);
      }
    }
    used.add(name);
    out.set(key, name);
  }
  return out;
}
