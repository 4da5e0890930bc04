// Homie's `$format` strings: `min:max` (v5: `min:max:step`, either bound may
// be empty) for numbers, `a,b,c` for enums.
import type { Range } from '../../model.js';

/** A numeric range when both bounds are there and min < max; otherwise undefined. */
export function parseRange(format: string | undefined, integer: boolean): Range | undefined {
  if (!format) return undefined;
  const parts = format.split(':').map((p) => p.trim());
  if (parts.length < 2 || parts.length > 3 || parts[0] === '' || parts[1] === '') return undefined;
  const [min, max] = [Number(parts[0]), Number(parts[1])];
  const step = parts[2] ? Number(parts[2]) : integer ? 1 : undefined;
  if (!Number.isFinite(min) || !Number.isFinite(max) || min >= max) return undefined;
  if (step !== undefined && !(Number.isFinite(step) && step > 0)) return undefined;
  return { min, max, ...(step !== undefined ? { step } : {}) };
}

/** Distinct non-empty enum values. */
export function parseEnum(format: string | undefined): string[] {
  if (!format) return [];
  return [
    ...new Set(
      format
        .split(',')
        .map((v) => v.trim())
        .filter((v) => v.length > 0),
    ),
  ];
}
