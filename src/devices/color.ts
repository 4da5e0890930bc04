// Light colours: the words and #hex a person or a model uses, converted into
// what a light takes (CIE xy, hue/saturation or RGB), and the check that the
// colour a light reports back is the one asked for. Bulbs clamp a colour to
// their gamut and round it, so the check has a tolerance in the light's own
// terms.

export interface Rgb {
  r: number;
  g: number;
  b: number;
}

export type ColorMode = 'xy' | 'hs' | 'rgb';

/** The attributes that carry a light's colour, in every mode. */
export const COLOR_ATTRIBUTES: ReadonlySet<string> = new Set(['color_x', 'color_y', 'hue', 'saturation', 'red', 'green', 'blue']);

/** Colour words people say to a lamp. */
export const COLOR_NAMES: Readonly<Record<string, Rgb>> = {
  red: { r: 255, g: 0, b: 0 },
  crimson: { r: 220, g: 20, b: 60 },
  coral: { r: 255, g: 127, b: 80 },
  orange: { r: 255, g: 140, b: 0 },
  amber: { r: 255, g: 191, b: 0 },
  gold: { r: 255, g: 215, b: 0 },
  yellow: { r: 255, g: 255, b: 0 },
  lime: { r: 191, g: 255, b: 0 },
  green: { r: 0, g: 255, b: 0 },
  teal: { r: 0, g: 128, b: 128 },
  turquoise: { r: 64, g: 224, b: 208 },
  cyan: { r: 0, g: 255, b: 255 },
  'sky blue': { r: 135, g: 206, b: 235 },
  blue: { r: 0, g: 0, b: 255 },
  indigo: { r: 75, g: 0, b: 130 },
  violet: { r: 143, g: 0, b: 255 },
  purple: { r: 128, g: 0, b: 128 },
  lavender: { r: 181, g: 126, b: 220 },
  magenta: { r: 255, g: 0, b: 255 },
  pink: { r: 255, g: 105, b: 180 },
  white: { r: 255, g: 255, b: 255 },
};

/** A colour name (`red`, `sky blue`) or `#rgb` / `#rrggbb`; undefined when it is neither. */
export function parseColor(text: string): Rgb | undefined {
  const t = text.trim().toLowerCase().replace(/\s+/g, ' ');
  if (Object.hasOwn(COLOR_NAMES, t)) return { ...COLOR_NAMES[t]! };
  const hex = /^#?([0-9a-f]{3}|[0-9a-f]{6})$/.exec(t)?.[1];
  if (!hex) return undefined;
  const full = hex.length === 3 ? [...hex].map((c) => c + c).join('') : hex;
  return { r: parseInt(full.slice(0, 2), 16), g: parseInt(full.slice(2, 4), 16), b: parseInt(full.slice(4, 6), 16) };
}

const round = (v: number, digits: number) => Math.round(v * 10 ** digits) / 10 ** digits;
const linear = (c: number) => {
  const v = c / 255;
  return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
};

/** sRGB -> CIE 1931 xy (D65), four decimals, as Zigbee lights and Home Assistant take it. */
export function rgbToXy({ r, g, b }: Rgb): { x: number; y: number } {
  const [R, G, B] = [linear(r), linear(g), linear(b)];
  const X = R * 0.4124 + G * 0.3576 + B * 0.1805;
  const Y = R * 0.2126 + G * 0.7152 + B * 0.0722;
  const Z = R * 0.0193 + G * 0.1192 + B * 0.9505;
  const sum = X + Y + Z;
  // Black has no chromaticity: call it the white point.
  if (sum === 0) return { x: 0.3127, y: 0.329 };
  return { x: round(X / sum, 4), y: round(Y / sum, 4) };
}

/** sRGB -> hue (0-360) and saturation (0-100), whole numbers. */
export function rgbToHs({ r, g, b }: Rgb): { hue: number; saturation: number } {
  const max = Math.max(r, g, b);
  const min = Math.min(r, g, b);
  const d = max - min;
  let h = 0;
  if (d > 0) {
    if (max === r) h = ((g - b) / d) % 6;
    else if (max === g) h = (b - r) / d + 2;
    else h = (r - g) / d + 4;
  }
  const hue = Math.round((h * 60 + 360) % 360);
  return { hue, saturation: max === 0 ? 0 : Math.round((d / max) * 100) };
}

const gamma = (v: number) => (v <= 0.0031308 ? 12.92 * v : 1.055 * v ** (1 / 2.4) - 0.055);

/** CIE xy -> the brightest sRGB of that chromaticity (the inverse of rgbToXy, up to brightness). */
export function xyToRgb({ x, y }: { x: number; y: number }): Rgb {
  if (!(y > 0)) return { r: 255, g: 255, b: 255 };
  const X = x / y;
  const Z = (1 - x - y) / y;
  const lin = [3.2406 * X - 1.5372 - 0.4986 * Z, -0.9689 * X + 1.8758 + 0.0415 * Z, 0.0557 * X - 0.204 + 1.057 * Z].map((v) => Math.max(0, v));
  const max = Math.max(...lin) || 1;
  const [r, g, b] = lin.map((v) => Math.round(gamma(v / max) * 255));
  return { r: r!, g: g!, b: b! };
}

/** Hue (0-360) and saturation (0-100) -> sRGB at full value. */
export function hsToRgb({ hue, saturation }: { hue: number; saturation: number }): Rgb {
  const s = Math.min(100, Math.max(0, saturation)) / 100;
  const f = (n: number) => {
    const k = (n + (((hue % 360) + 360) % 360) / 60) % 6;
    return Math.round(255 * (1 - s * Math.max(0, Math.min(k, 4 - k, 1))));
  };
  return { r: f(5), g: f(3), b: f(1) };
}

export const rgbHex = ({ r, g, b }: Rgb): string => `#${[r, g, b].map((v) => Math.round(v).toString(16).padStart(2, '0')).join('')}`;

/** The colour in a light's attributes (a command body or a state), as sRGB; undefined when there is none. */
export function rgbOfAttributes(attributes: Record<string, unknown>): Rgb | undefined {
  const x = num(attributes.color_x);
  const y = num(attributes.color_y);
  if (x !== undefined && y !== undefined) return xyToRgb({ x, y });
  const hue = num(attributes.hue);
  const saturation = num(attributes.saturation);
  if (hue !== undefined && saturation !== undefined) return hsToRgb({ hue, saturation });
  const [r, g, b] = [num(attributes.red), num(attributes.green), num(attributes.blue)];
  if (r !== undefined && g !== undefined && b !== undefined) return { r, g, b };
  return undefined;
}

/** The attributes a colour command sets, in the light's mode. */
export function colorAttributes(mode: ColorMode, rgb: Rgb): Record<string, number> {
  switch (mode) {
    case 'xy': {
      const { x, y } = rgbToXy(rgb);
      return { color_x: x, color_y: y };
    }
    case 'hs':
      return rgbToHs(rgb);
    case 'rgb':
      return { red: rgb.r, green: rgb.g, blue: rgb.b };
  }
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/**
 * Does the colour a light reports match the one asked for? It is compared in
 * whichever terms the light reports (xy, then hue/saturation, then RGB).
 * undefined: the light reports no colour at all.
 */
export function colorMatches(rgb: Rgb, attributes: Record<string, unknown>): boolean | undefined {
  const x = num(attributes.color_x);
  const y = num(attributes.color_y);
  if (x !== undefined && y !== undefined) {
    const want = rgbToXy(rgb);
    // A bulb clamps to its gamut: sRGB red (0.64, 0.33) comes back from a gamut C bulb as (0.69, 0.31), 0.056 away.
    return Math.hypot(x - want.x, y - want.y) <= 0.08;
  }
  const hue = num(attributes.hue);
  const saturation = num(attributes.saturation);
  if (hue !== undefined && saturation !== undefined) {
    const want = rgbToHs(rgb);
    const dh = Math.abs(hue - want.hue) % 360;
    return (want.saturation < 5 || Math.min(dh, 360 - dh) <= 8) && Math.abs(saturation - want.saturation) <= 8;
  }
  const [r, g, b] = [num(attributes.red), num(attributes.green), num(attributes.blue)];
  if (r !== undefined && g !== undefined && b !== undefined) {
    return Math.abs(r - rgb.r) <= 24 && Math.abs(g - rgb.g) <= 24 && Math.abs(b - rgb.b) <= 24;
  }
  return undefined;
}

/** The nearest colour word to what a light reports, for state text; undefined without a colour. */
export function nearestColorName(attributes: Record<string, unknown>): string | undefined {
  const x = num(attributes.color_x);
  const y = num(attributes.color_y);
  const hue = num(attributes.hue);
  const saturation = num(attributes.saturation);
  const rgb = [num(attributes.red), num(attributes.green), num(attributes.blue)];
  let best: string | undefined;
  let bestD = Infinity;
  for (const [name, c] of Object.entries(COLOR_NAMES)) {
    let d: number;
    if (x !== undefined && y !== undefined) {
      const w = rgbToXy(c);
      d = Math.hypot(x - w.x, y - w.y) * 360;
    } else if (hue !== undefined && saturation !== undefined) {
      const w = rgbToHs(c);
      const dh = Math.abs(hue - w.hue) % 360;
      d = Math.min(dh, 360 - dh) * (saturation / 100) + Math.abs(saturation - w.saturation);
    } else if (rgb.every((v) => v !== undefined)) {
      d = Math.hypot(rgb[0]! - c.r, rgb[1]! - c.g, rgb[2]! - c.b);
    } else return undefined;
    if (d < bestD) {
      bestD = d;
      best = name;
    }
  }
  return best;
}
