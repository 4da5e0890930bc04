// One string object for equal strings. A parser makes a new string for every scalar it reads: 10,000 entities read
// from YAML hold 10,000 copies of "sensor", of their device class, unit and value path, and one copy of a device's
// state topic per entity of the device (issue 45: ~1 MiB of a 10,000-entity home). A table per load (a file, a
// list of devices) shares them and is dropped with the load, so nothing outlives the devices that use it.

/** A function returning, for each string it is given, the first equal string it was given (undefined stays). */
export function interner(): <T extends string | undefined>(s: T) => T {
  const seen = new Map<string, string>();
  return <T extends string | undefined>(s: T): T => {
    if (s === undefined || typeof s !== 'string') return s;
    const one = seen.get(s);
    if (one !== undefined) return one as T;
    seen.set(s, s);
    return s;
  };
}

/**
 * `a + sep + b` as one flat string. A concatenation V8 keeps as a pair (a "cons string": 32 bytes beside its parts,
 * and the left part a string of its own) when the result is 13 characters or longer; an array join is laid out flat.
 */
export function joined(a: string, sep: string, b: string): string {
  return [a, b].join(sep);
}
