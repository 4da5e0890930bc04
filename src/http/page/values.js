// Values people read: a light's colour as a name and swatch, colour
// temperature in kelvin, a card's main value in words.
import { fmtValue } from './shared.js';

export const COLOR_WORDS = {
  red: [255, 0, 0],
  orange: [255, 140, 0],
  amber: [255, 191, 0],
  yellow: [255, 255, 0],
  lime: [191, 255, 0],
  green: [0, 255, 0],
  teal: [0, 128, 128],
  cyan: [0, 255, 255],
  'sky blue': [135, 206, 235],
  blue: [0, 0, 255],
  indigo: [75, 0, 130],
  violet: [143, 0, 255],
  purple: [128, 0, 128],
  magenta: [255, 0, 255],
  pink: [255, 105, 180],
  coral: [255, 127, 80],
  white: [255, 255, 255],
};
/** Swatches offered on a colour light (names the light takes). */
export const SWATCHES = ['white', 'amber', 'red', 'orange', 'yellow', 'green', 'cyan', 'blue', 'purple', 'pink'];

const gamma = (v) => (v <= 0.0031308 ? 12.92 * v : 1.055 * v ** (1 / 2.4) - 0.055);
/** The colour a light reports (xy, hue/saturation or RGB) as [r, g, b], or null. */
export function lightRgb(a) {
  const n = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
  const x = n(a.color_x),
    y = n(a.color_y);
  if (x !== undefined && y !== undefined && y > 0) {
    const X = x / y,
      Z = (1 - x - y) / y;
    const lin = [3.2406 * X - 1.5372 - 0.4986 * Z, -0.9689 * X + 1.8758 + 0.0415 * Z, 0.0557 * X - 0.204 + 1.057 * Z].map((v) => Math.max(0, v));
    const max = Math.max(...lin) || 1;
    return lin.map((v) => Math.round(gamma(v / max) * 255));
  }
  const hue = n(a.hue),
    sat = n(a.saturation);
  if (hue !== undefined && sat !== undefined) {
    const s = Math.min(100, Math.max(0, sat)) / 100;
    const f = (k0) => {
      const k = (k0 + (((hue % 360) + 360) % 360) / 60) % 6;
      return Math.round(255 * (1 - s * Math.max(0, Math.min(k, 4 - k, 1))));
    };
    return [f(5), f(3), f(1)];
  }
  if ([a.red, a.green, a.blue].every((v) => n(v) !== undefined)) return [a.red, a.green, a.blue];
  return null;
}
export const hex = (rgb) => `#${rgb.map((v) => Math.round(v).toString(16).padStart(2, '0')).join('')}`;
export function colorName(rgb) {
  let best = '',
    bestD = Infinity;
  for (const [name, c] of Object.entries(COLOR_WORDS)) {
    const d = (rgb[0] - c[0]) ** 2 + (rgb[1] - c[1]) ** 2 + (rgb[2] - c[2]) ** 2;
    if (d < bestD) [best, bestD] = [name, d];
  }
  return best;
}

const COLOR_KEYS = new Set(['color_x', 'color_y', 'hue', 'saturation', 'red', 'green', 'blue', 'color_temp']);

/** A reported color_temp as kelvin: lights speak mireds (100-1000) or kelvin (1000 and up). */
export const kelvinOf = (v) => (v > 1000 ? v : 1e6 / v);

/** 2700 K reads as "warm white · 2,700 K". */
export function kelvinWords(k) {
  // The words the state text uses (src/devices/color-temp.ts).
  const word = k < 2300 ? 'candlelight' : k < 3500 ? 'warm white' : k < 4500 ? 'neutral white' : k < 5700 ? 'cool white' : 'daylight';
  return `${word} · ${Math.round(k / 50) * 50} K`;
}

/** The card's big value, in words a person reads: "On · 76%", "21.4 °C", "Open · 40%". */
export function mainValue(e, ctl) {
  const withUnit = (v) => `${fmtValue(v)}${e.unit && typeof v === 'number' ? ` ${e.unit}` : ''}`;
  const a = e.attributes ?? {};
  const cap = (v) => {
    const t = fmtValue(v).replace(/_/g, ' ');
    return t.charAt(0).toUpperCase() + t.slice(1);
  };
  if (e.kind === 'camera') return e.frame ? 'Live picture' : 'No picture yet';
  if (e.kind === 'button') return e.updatedAt ? 'Pressed' : 'Button';
  if (e.value === null || e.value === undefined) return '—';
  if (e.kind === 'binary_sensor') {
    const words = {
      motion: ['Motion', 'Clear'],
      occupancy: ['Motion', 'Clear'],
      door: ['Open', 'Closed'],
      window: ['Open', 'Closed'],
      garage_door: ['Open', 'Closed'],
    }[e.deviceClass] ?? ['On', 'Off'];
    return e.value === 'on' ? words[0] : e.value === 'off' ? words[1] : cap(e.value);
  }
  if (e.kind === 'light' && e.value === 'on' && typeof a.brightness === 'number') {
    const max = ctl?.properties?.brightness?.maximum ?? 255;
    return `On · ${Math.round((a.brightness / max) * 100)}%`;
  }
  if ((e.kind === 'cover' || e.kind === 'valve') && typeof a.position === 'number') return `${cap(e.value)} · ${a.position}%`;
  if (e.kind === 'fan' && e.value === 'on' && typeof a.percentage === 'number') return `On · ${a.percentage}%`;
  if (e.kind === 'climate') return typeof a.current_temperature === 'number' ? withUnit(a.current_temperature) : cap(e.value);
  return typeof e.value === 'number' ? withUnit(e.value) : cap(e.value);
}

/** Attributes left for the details (the ones the value and controls already show are out). */
export function detailAttrs(e) {
  const shown = new Set(COLOR_KEYS);
  if (e.kind === 'light') shown.add('brightness');
  if (e.kind === 'climate') shown.add('current_temperature');
  return Object.entries(e.attributes ?? {}).filter(([k, v]) => v !== null && !(shown.has(k) && e.kind === 'light'));
}
