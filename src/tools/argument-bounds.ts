// Bounds on a tool call's arguments, checked before anything recursive
// (validation, cloning, hashing, the audit) touches them: arguments nested
// thousands of levels deep used to blow the stack and leave no audit row.
// The walk is iterative, and stops at the first bound broken.

export const MAX_ARGUMENT_DEPTH = 32;
/** Roughly the size of the arguments as JSON. */
export const MAX_ARGUMENT_BYTES = 256 * 1024;
export const MAX_ARGUMENT_NODES = 10_000;

/** Why the arguments break a bound (the reason names the member), or undefined when they are within bounds. */
export function argumentBoundsProblem(args: unknown): string | undefined {
  const stack: Array<{ value: unknown; depth: number; path: string }> = [{ value: args, depth: 0, path: '' }];
  let bytes = 0;
  let nodes = 0;
  while (stack.length) {
    const { value, depth, path } = stack.pop()!;
    if (++nodes > MAX_ARGUMENT_NODES) return `the arguments have more than ${MAX_ARGUMENT_NODES} values`;
    if (typeof value === 'string') bytes += value.length + 2;
    else if (value === null || typeof value !== 'object') bytes += 8;
    else {
      if (depth >= MAX_ARGUMENT_DEPTH) return `"${path.split('/')[1] ?? path}" is nested more than ${MAX_ARGUMENT_DEPTH} levels deep`;
      const keys = Array.isArray(value) ? null : Object.keys(value);
      const count = keys ? keys.length : (value as unknown[]).length;
      if (nodes + stack.length + count > MAX_ARGUMENT_NODES) return `the arguments have more than ${MAX_ARGUMENT_NODES} values`;
      bytes += 2;
      for (let i = 0; i < count; i++) {
        const k = keys ? keys[i] : String(i);
        bytes += k.length + 4;
        stack.push({ value: keys ? (value as Record<string, unknown>)[k] : (value as unknown[])[i], depth: depth + 1, path: `${path}/${k}` });
      }
    }
    if (bytes > MAX_ARGUMENT_BYTES) return `the arguments are larger than ${MAX_ARGUMENT_BYTES} bytes`;
  }
  return undefined;
}

/** What the audit keeps of arguments over the bounds: their top-level members, each cut short. */
export function argumentSummary(args: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = { '(not stored)': 'arguments over the bounds; a summary' };
  if (!args || typeof args !== 'object' || Array.isArray(args)) return out;
  let n = 0;
  for (const k in args) {
    if (!Object.hasOwn(args, k)) continue;
    if (++n > 20) {
      out['(more)'] = 'members left out';
      break;
    }
    const v = (args as Record<string, unknown>)[k];
    out[k.slice(0, 64)] =
      typeof v === 'string'
        ? v.length > 100
          ? `${v.slice(0, 100)}… (${v.length} characters)`
          : v
        : v === null || typeof v === 'number' || typeof v === 'boolean'
          ? v
          : Array.isArray(v)
            ? `(a list of ${v.length})`
            : '(an object)';
  }
  return out;
}
