// A packed run of one entity's recorded changes (history_blocks.data): times as unsigned varint steps from the
// block's t0 (ms), then the values. Numbers that are decimals of at most 6 places (21.37, 1013.2, 0) are
// stored as varint steps of the scaled integer (zigzag: a sensor drifting by 0.01 costs one byte); other numbers
// as 8-byte floats; a block with text or null in it as the JSON of its values. First byte: the kind (0-6:
// decimal places, 7: floats, 8: JSON). Decoding gives back exactly what was encoded.
export type Value = number | string | null;

const FLOATS = 7;
const JSON_VALUES = 8;
const MAX_SCALED = 2 ** 50;

/** Encode readings already in time order (ts[0] is the block's t0). */
export function encodeBlock(ts: readonly number[], vals: readonly Value[]): Buffer {
  const out: number[] = [];
  const kind = kindOf(vals);
  out.push(kind);
  let prev = ts[0]!;
  for (const t of ts) {
    varint(out, t - prev);
    prev = t;
  }
  if (kind === JSON_VALUES) return Buffer.concat([Buffer.from(out), Buffer.from(JSON.stringify(vals), 'utf8')]);
  if (kind === FLOATS) {
    const f = Buffer.alloc(vals.length * 8);
    for (let i = 0; i < vals.length; i++) f.writeDoubleLE(vals[i] as number, i * 8);
    return Buffer.concat([Buffer.from(out), f]);
  }
  const scale = 10 ** kind;
  let last = 0;
  for (const v of vals) {
    const n = Math.round((v as number) * scale);
    const d = n - last;
    varint(out, d >= 0 ? d * 2 : -d * 2 - 1);
    last = n;
  }
  return Buffer.from(out);
}

export function decodeBlock(t0: number, n: number, data: Uint8Array): { ts: number[]; vals: Value[] } {
  const kind = data[0]!;
  const ts = new Array<number>(n);
  const pos = { i: 1 };
  let t = t0;
  for (let k = 0; k < n; k++) {
    t += readVarint(data, pos);
    ts[k] = t;
  }
  if (kind === JSON_VALUES) return { ts, vals: JSON.parse(Buffer.from(data.buffer, data.byteOffset + pos.i, data.length - pos.i).toString('utf8')) as Value[] };
  const vals = new Array<Value>(n);
  if (kind === FLOATS) {
    const view = new DataView(data.buffer, data.byteOffset + pos.i, n * 8);
    for (let k = 0; k < n; k++) vals[k] = view.getFloat64(k * 8, true);
    return { ts, vals };
  }
  const scale = 10 ** kind;
  let last = 0;
  for (let k = 0; k < n; k++) {
    const z = readVarint(data, pos);
    last += z % 2 === 0 ? z / 2 : -(z + 1) / 2;
    vals[k] = last / scale;
  }
  return { ts, vals };
}

/** The fewest decimal places that give every number back exactly; floats or JSON when none does. */
function kindOf(vals: readonly Value[]): number {
  let numbers = true;
  for (const v of vals) if (typeof v !== 'number' || !Number.isFinite(v)) numbers = false;
  if (!numbers) return vals.every((v) => typeof v === 'number') ? FLOATS : JSON_VALUES;
  for (let places = 0; places <= 6; places++) {
    const scale = 10 ** places;
    let fits = true;
    for (const v of vals as number[]) {
      const n = Math.round(v * scale);
      if (Math.abs(n) > MAX_SCALED || n / scale !== v) {
        fits = false;
        break;
      }
    }
    if (fits) return places;
  }
  return FLOATS;
}

function varint(out: number[], n: number): void {
  while (n >= 128) {
    out.push((n % 128) + 128);
    n = Math.floor(n / 128);
  }
  out.push(n);
}

function readVarint(data: Uint8Array, pos: { i: number }): number {
  let n = 0;
  let mul = 1;
  for (;;) {
    const b = data[pos.i++]!;
    n += (b & 127) * mul;
    if (b < 128) return n;
    mul *= 128;
  }
}
