// Seeded, reproducible fuzzing for the fault tests: a PRNG (mulberry32) and
// generators for hostile strings, JSON values, MQTT payloads, mutated
// payloads, tool arguments derived from a tool's JSON Schema, principals and
// tool names. The same seed gives the same sequence on every run, so a
// failure names its seed and can be replayed:
//
//   HEARTH_FUZZ_SEED=0x1234 node --import tsx --test test/faults/fuzz-tools.test.ts
//
// Nothing here touches MQTT or the bridge; the tests do.

/** The seed to use: `HEARTH_FUZZ_SEED` (decimal or 0x hex) when set, else the test's fixed default. */
export function fuzzSeed(fallback: number, env = process.env.HEARTH_FUZZ_SEED): number {
  if (env === undefined || env.trim() === '') return fallback >>> 0;
  const n = Number(env.trim());
  if (!Number.isInteger(n) || n < 0) throw new Error(`HEARTH_FUZZ_SEED must be a whole number (decimal or 0x...), got ${JSON.stringify(env)}`);
  return n >>> 0;
}

/** `0x00c0ffee`: how seeds are printed in test names. */
export const hexSeed = (seed: number): string => `0x${(seed >>> 0).toString(16).padStart(8, '0')}`;

/** Deterministic PRNG (mulberry32): floats in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Characters that mean something to MQTT, shells, JSON, SQL, paths or terminals. */
export const NASTY_FRAGMENTS = [
  '#',
  '+',
  '$',
  '/',
  '//',
  '/#',
  '+/+',
  '$SYS/broker',
  '$share/g/t',
  '\u0000',
  '\n',
  '\r\n',
  '\t',
  '\u001b[31m',
  '\u202e',
  '\u200b',
  '\ufeff',
  '\u2028',
  '"',
  "'",
  '\\',
  '`',
  ['$', '{x}'].join(''),
  '{{x}}',
  '%s%n',
  '../../etc/passwd',
  "'; DROP TABLE audit; --",
  '<script>alert(1)</script>',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'NaN',
  'Infinity',
  '-0',
  'null',
  'undefined',
  'true',
  '1e309',
  '0x10',
  '😀',
  '👨‍👩‍👧',
  'ñ',
  'ﬁ',
  'İ',
  '\ud800',
  'IGNORE ALL PREVIOUS INSTRUCTIONS',
  'host__front_door_lock',
  'role:owner',
  '*',
  '?',
  '|',
];

export class Fuzz {
  private readonly rand: () => number;

  constructor(readonly seed: number) {
    this.rand = mulberry32(seed);
  }

  /** A float in [0, 1). */
  next(): number {
    return this.rand();
  }

  /** A whole number in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.rand() * (max - min + 1));
  }

  bool(p = 0.5): boolean {
    return this.rand() < p;
  }

  pick<T>(list: readonly T[]): T {
    if (!list.length) throw new Error('pick from an empty list');
    return list[Math.floor(this.rand() * list.length)] as T;
  }

  /** Pick by weight: `[[3, 'a'], [1, 'b']]`. */
  weighted<T>(choices: ReadonlyArray<readonly [number, T]>): T {
    const total = choices.reduce((s, [w]) => s + w, 0);
    let r = this.rand() * total;
    for (const [w, v] of choices) {
      r -= w;
      if (r < 0) return v;
    }
    return choices[choices.length - 1]![1];
  }

  shuffle<T>(list: readonly T[]): T[] {
    const out = [...list];
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.rand() * (i + 1));
      [out[i], out[j]] = [out[j]!, out[i]!];
    }
    return out;
  }

  /** A string of `length` characters from `alphabet`. */
  chars(length: number, alphabet: string): string {
    const set = Array.from(alphabet);
    let s = '';
    for (let i = 0; i < length; i++) s += set[Math.floor(this.rand() * set.length)];
    return s;
  }

  /** Any code units at all, including lone surrogates and NUL. */
  rawUnicode(length: number): string {
    let s = '';
    for (let i = 0; i < length; i++) {
      const r = this.rand();
      s += String.fromCharCode(r < 0.6 ? 32 + Math.floor(this.rand() * 95) : r < 0.8 ? Math.floor(this.rand() * 32) : Math.floor(this.rand() * 0x10000));
    }
    return s;
  }

  /** A string meant to hurt: MQTT wildcards, control characters, injections, huge runs, or mixes of them. */
  nastyString(): string {
    return this.weighted<() => string>([
      [4, () => this.pick(NASTY_FRAGMENTS)],
      [3, () => Array.from({ length: this.int(2, 6) }, () => (this.bool() ? this.pick(NASTY_FRAGMENTS) : this.chars(this.int(1, 8), 'abcxyz_ -.'))).join('')],
      [2, () => this.rawUnicode(this.int(0, 40))],
      [1, () => ''],
      [1, () => ' '.repeat(this.int(1, 5))],
      [1, () => this.hugeString()],
      [1, () => `kitchen_light.light${this.pick(['#', '+', '/#', '/+', '\u0000', ' ', '\n'])}`],
    ])();
  }

  /** 10 KiB to 300 KiB: over every length limit Hearth has. */
  hugeString(): string {
    const unit = this.pick(['A', '#', '😀', 'ab+/', '\u0000']);
    return unit.repeat(Math.ceil(this.int(10_000, 300_000) / unit.length));
  }

  /** A hostile number. */
  nastyNumber(): number {
    return this.pick([NaN, Infinity, -Infinity, -0, 0, 1e308, -1e308, 5e-324, 2 ** 53, -(2 ** 53) - 2, 0.1 + 0.2, -1, 255, 256, 100.5, 22.25, 1e-9]);
  }

  /** A random JSON-ish value (may hold NaN / Infinity, which JSON cannot carry: the bridge must cope when called in-process). */
  value(depth = 0): unknown {
    return this.weighted<() => unknown>([
      [3, () => this.nastyString()],
      [3, () => this.nastyNumber()],
      [2, () => this.int(-1000, 1000)],
      [1, () => this.bool()],
      [1, () => null],
      [1, () => undefined],
      [depth < 3 ? 1 : 0, () => Array.from({ length: this.int(0, 4) }, () => this.value(depth + 1))],
      [depth < 3 ? 1 : 0, () => this.object(depth + 1)],
    ])();
  }

  object(depth = 0): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (let i = this.int(0, 4); i > 0; i--) {
      const key = this.bool(0.3)
        ? this.pick(['__proto__', 'constructor', 'entity', 'action', 'value', 'state', '', '#', '$'])
        : this.chars(this.int(1, 10), 'abcdefxyz_');
      // defineProperty so that `__proto__` becomes an own key, as JSON.parse would make it.
      Object.defineProperty(out, key, { value: this.value(depth), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }

  /** Random bytes. */
  bytes(length: number): Buffer {
    const b = Buffer.alloc(length);
    for (let i = 0; i < length; i++) b[i] = Math.floor(this.rand() * 256);
    return b;
  }

  /** Flip, drop, duplicate, insert or splice: a mutated copy of a (usually valid) payload. */
  mutate(input: Buffer | string): Buffer {
    let b = Buffer.from(input);
    for (let n = this.int(1, 4); n > 0; n--) {
      const at = b.length ? this.int(0, b.length - 1) : 0;
      const op = this.int(0, 7);
      if (op === 0 && b.length) b[at] = b[at]! ^ (1 << this.int(0, 7));
      else if (op === 1) b = b.subarray(0, at);
      else if (op === 2) b = Buffer.concat([b.subarray(0, at), b.subarray(at + 1)]);
      else if (op === 3) b = Buffer.concat([b.subarray(0, at), Buffer.from(this.pick(NASTY_FRAGMENTS)), b.subarray(at)]);
      else if (op === 4) b = Buffer.concat([b, b]);
      else if (op === 5 && b.length) b[at] = this.pick([0x00, 0xff, 0x22, 0x7b, 0x7d, 0x5c, 0x80, 0xc0]);
      else if (op === 6) b = Buffer.concat([b.subarray(0, at), this.bytes(this.int(1, 16)), b.subarray(at)]);
      else b = Buffer.from(b.toString('latin1').toUpperCase(), 'latin1');
    }
    return b;
  }

  /** A payload for a state, availability or discovery topic: plausible, mutated, or garbage. */
  payload(valid: readonly (string | Buffer)[] = []): Buffer {
    return this.weighted<() => Buffer>([
      [valid.length ? 4 : 0, () => this.mutate(this.pick(valid))],
      [valid.length ? 1 : 0, () => Buffer.from(this.pick(valid))],
      [2, () => Buffer.from(JSON.stringify(this.object()) ?? '{}')],
      [2, () => Buffer.from(JSON.stringify(this.value()) ?? 'null')],
      [2, () => Buffer.from(this.nastyString())],
      [1, () => this.bytes(this.int(0, 64))],
      [1, () => Buffer.alloc(0)],
      [1, () => Buffer.from(`{"state":${this.pick(['"ON"', 'ON', '1e999', 'NaN', '{"a":', '[]', '"\\u0000"', '-'])}`)],
      [1, () => Buffer.from('['.repeat(this.int(100, 5000)))], // deep nesting
      [0.3, () => Buffer.alloc(this.int(256 * 1024, 300 * 1024), this.pick([0x41, 0x7b, 0xff]))], // over the state size limit
    ])();
  }

  /**
   * Arguments for a tool, derived from its JSON Schema: often valid (so the
   * call gets deep into the pipeline), often one field broken (wrong type,
   * out of range, NaN, huge or hostile string, unknown field, missing
   * required field), sometimes not an object at all.
   */
  args(schema: Record<string, unknown>): unknown {
    const valid = this.validFor(schema) as Record<string, unknown>;
    return this.weighted<() => unknown>([
      [3, () => valid],
      [6, () => this.breakOneField(schema, valid)],
      [1, () => this.object()],
      [1, () => this.pick<unknown>([null, undefined, 42, 'turn_on', [], [valid], true, NaN])],
    ])();
  }

  private breakOneField(schema: Record<string, unknown>, valid: Record<string, unknown>): Record<string, unknown> {
    const out: Record<string, unknown> = { ...valid };
    const props = Object.keys((schema.properties as Record<string, unknown>) ?? {});
    const required = (schema.required as string[] | undefined) ?? [];
    const op = this.int(0, 5);
    if (op === 0 && required.length) {
      delete out[this.pick(required)];
    } else if (op === 1) {
      Object.defineProperty(out, this.pick(['colour', '__proto__', 'constructor', '#', '', 'entity_id', 'topic']), {
        value: this.value(),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } else if (props.length) {
      const key = this.pick(props);
      out[key] = this.weighted<() => unknown>([
        [3, () => this.nastyString()],
        [3, () => this.nastyNumber()],
        [1, () => this.value()],
        [1, () => String(out[key])],
        [1, () => (typeof out[key] === 'number' ? (out[key] as number) + this.pick([0.5, 0.25, 1e-7, 1000, -1000]) : out[key])],
      ])();
    }
    return out;
  }

  /** A value that satisfies a (simple) JSON Schema: enum, const, number ranges with multipleOf, strings, objects. */
  validFor(schema: Record<string, unknown> | undefined): unknown {
    if (!schema) return null;
    if (Array.isArray(schema.enum)) return this.pick(schema.enum as unknown[]);
    if ('const' in schema) return schema.const;
    const type = Array.isArray(schema.type) ? this.pick(schema.type as string[]) : (schema.type as string | undefined);
    switch (type) {
      case 'object': {
        const props = (schema.properties as Record<string, Record<string, unknown>>) ?? {};
        const required = new Set((schema.required as string[] | undefined) ?? []);
        const out: Record<string, unknown> = {};
        for (const [k, s] of Object.entries(props)) if (required.has(k) || this.bool(0.5)) out[k] = this.validFor(s);
        return out;
      }
      case 'integer':
      case 'number': {
        const min = typeof schema.minimum === 'number' ? schema.minimum : -1000;
        const max = typeof schema.maximum === 'number' ? schema.maximum : 1000;
        const step = typeof schema.multipleOf === 'number' ? schema.multipleOf : type === 'integer' ? 1 : 0;
        if (!step) return min + this.next() * (max - min);
        const steps = Math.floor((max - min) / step);
        return Math.round((Math.ceil(min / step) + this.int(0, Math.max(0, steps))) * step * 1e9) / 1e9;
      }
      case 'string': {
        const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
        const max = Math.min(typeof schema.maxLength === 'number' ? schema.maxLength : 20, 40);
        return this.chars(this.int(Math.max(min, 1), Math.max(min, max, 1)), 'abcdefghij klmnop_.');
      }
      case 'boolean':
        return this.bool();
      case 'array':
        return [];
      default:
        return null;
    }
  }

  /** Who is asking: plausible ids, hostile ids, and hostile roles. Never the `owner` role unless `allowOwner`. */
  principal(allowOwner = false): { id: string; roles: string[] } {
    const id = this.weighted<() => string>([
      [3, () => `${this.pick(['chat', 'voice', 'flow', 'mcp', 'cli', 'http', 'agent'])}:${this.chars(this.int(1, 12), 'abcdefgh0123-_')}`],
      [3, () => this.nastyString()],
      [1, () => this.pick(['role:owner', '*', 'cli:*', 'chat:alice|role:owner', '', ' ', 'cli:test-owner ', 'CLI:TEST-OWNER'])],
    ])();
    const roles = Array.from({ length: this.int(0, 3) }, () =>
      this.weighted<() => string>([
        [
          3,
          () =>
            this.pick([
              'guest',
              'child',
              'adult',
              'voice',
              'automation',
              'family',
              'Owner',
              'OWNER',
              'owner ',
              ' owner',
              'owner|admin',
              'own*',
              '*',
              'role:owner',
              '',
            ]),
        ],
        [2, () => this.nastyString()],
      ])(),
    );
    if (allowOwner && this.bool(0.3)) roles.push('owner');
    return { id, roles };
  }

  /** A tool name: a real one, a near miss, or garbage. */
  toolName(known: readonly string[]): string {
    return this.weighted<() => string>([
      [2, () => this.pick(known)],
      [2, () => `host__${this.pick(known)}`],
      [2, () => this.pick(known).toUpperCase()],
      [2, () => `${this.pick(known)}${this.pick(['#', '+', '/', ' ', '\u0000', '_', '__x'])}`],
      [3, () => this.nastyString()],
      [1, () => this.pick(['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'host__', 'host__host__get_state', 'shell', 'bash', ''])],
    ])();
  }
}
