// White light by colour temperature: a tool and a person speak kelvin (2700 K
// is warm white); many lights speak mireds (a million over the kelvin:
// Zigbee, Home Assistant's older lights). Converting rounds, and a bulb steps
// its own way, so the check that a light reports what was asked has a
// tolerance, taken in mireds (where a step looks the same warm or cool).

/** How a light takes colour temperature: its range in kelvin and the unit it speaks. */
export interface ColorTempSupport {
  minKelvin: number;
  maxKelvin: number;
  unit: 'kelvin' | 'mired';
  /** A mired light's own range, when it declares one: a kelvin converted to mireds is kept within it. */
  mireds?: { min: number; max: number };
}

/** How far (in mireds) a reported colour temperature may be from the asked one and still confirm it. */
export const COLOR_TEMP_TOLERANCE_MIRED = 6;

export const kelvinToMired = (kelvin: number): number => Math.round(1e6 / kelvin);
export const miredToKelvin = (mired: number): number => Math.round(1e6 / mired);

/**
 * A light's range in mireds as the kelvin people say: to the nearest 10 K, so
 * 370 mireds reads 2700 K, not 2703 (the mireds are kept, to clamp to).
 */
export function kelvinRangeOfMireds(a: number, b: number): { minKelvin: number; maxKelvin: number; mireds: { min: number; max: number } } {
  const [min, max] = [Math.min(a, b), Math.max(a, b)];
  const tens = (k: number) => Math.round(k / 10) * 10;
  return { minKelvin: tens(1e6 / max), maxKelvin: tens(1e6 / min), mireds: { min, max } };
}

/** Kelvin -> the number the light takes. */
export function toDeviceColorTemp(support: ColorTempSupport, kelvin: number): number {
  if (support.unit === 'kelvin') return Math.round(kelvin);
  const mired = kelvinToMired(kelvin);
  return support.mireds ? Math.min(support.mireds.max, Math.max(support.mireds.min, mired)) : mired;
}

/** What a light reports -> kelvin; undefined for nothing usable (0 or not a number). */
export function fromDeviceColorTemp(support: ColorTempSupport, value: unknown): number | undefined {
  const n = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN;
  if (!Number.isFinite(n) || n <= 0) return undefined;
  return support.unit === 'mired' ? miredToKelvin(n) : Math.round(n);
}

/** Does the reported value (in the light's unit) match the asked kelvin? undefined: nothing reported. */
export function colorTempMatches(support: ColorTempSupport, kelvin: number, reported: unknown): boolean | undefined {
  const got = fromDeviceColorTemp(support, reported);
  if (got === undefined) return undefined;
  return Math.abs(1e6 / got - 1e6 / kelvin) <= COLOR_TEMP_TOLERANCE_MIRED;
}

/** Words people use for white light, with the kelvin they mean. */
export const COLOR_TEMP_WORDS: Readonly<Record<string, number>> = {
  candlelight: 1900,
  'warm white': 2700,
  'soft white': 3000,
  'neutral white': 4000,
  'cool white': 5000,
  daylight: 6500,
};

/** The word for a colour temperature: "warm white" for 2700 K. */
export function colorTempWord(kelvin: number): string {
  if (kelvin < 2300) return 'candlelight';
  if (kelvin < 3500) return 'warm white';
  if (kelvin < 4500) return 'neutral white';
  if (kelvin < 5700) return 'cool white';
  return 'daylight';
}

/** The light's range as people read it: "2000 to 6500 K". */
export function colorTempRangeText(support: ColorTempSupport): string {
  return `${support.minKelvin} to ${support.maxKelvin} K`;
}
