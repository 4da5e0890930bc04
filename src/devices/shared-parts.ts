// Equal small parts of entities (payloads, states, ranges, options, command topics: mostly a kind's defaults), one
// frozen copy each. 10,000 entities of a few kinds need a few dozen such objects, not 60,000 (~0.3 KiB an entity;
// issue 45). Frozen, so that a part one entity shares with others is never changed through it.

/** JSON-faithful parts only (strings, numbers, arrays, plain objects): a function in a part would not be told apart. */
export type SharedPart = Record<string, unknown> | unknown[];

/** A table of shared parts holding at most `max` distinct ones (past it, a part is frozen but not shared). */
export function sharedParts(max: number): <T extends SharedPart>(value: T) => T {
  const table = new Map<string, object>();
  return <T extends SharedPart>(value: T): T => {
    // Infinity, NaN and undefined are told apart from null and from a missing key.
    const key = JSON.stringify(value, (_k, v: unknown) =>
      v === undefined ? '\u0000undefined' : typeof v === 'number' && !Number.isFinite(v) ? `\u0000${v}` : v,
    );
    let one = table.get(key);
    if (!one) {
      one = deepFreeze(value);
      if (table.size < max) table.set(key, one);
    }
    return one as T;
  };
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
