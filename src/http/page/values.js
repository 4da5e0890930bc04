// Values people read: a light's colour as a name and swatch, colour
// temperature in kelvin, a card's main value in words.
import { fmtValue, state } from './shared.js';

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

/** "living_room_lamp" -> "Living room lamp"; "turn_on" -> "Turn on". */
export const cap = (v) => {
  const t = fmtValue(v).replace(/_/g, ' ');
  return t.charAt(0).toUpperCase() + t.slice(1);
};

/** What a binary sensor's on and off mean, by its device class (the card, the history and the chat say the same). */
const BINARY_WORDS = {
  motion: ['Motion', 'Clear'],
  occupancy: ['Motion', 'Clear'],
  presence: ['Home', 'Away'],
  door: ['Open', 'Closed'],
  window: ['Open', 'Closed'],
  garage_door: ['Open', 'Closed'],
  opening: ['Open', 'Closed'],
  lock: ['Unlocked', 'Locked'],
  moisture: ['Wet', 'Dry'],
  smoke: ['Smoke', 'Clear'],
  gas: ['Gas', 'Clear'],
  battery: ['Low', 'Normal'],
  connectivity: ['Connected', 'Disconnected'],
};

/** One state value as a word: "Motion", "Closed", "On", "Heat"; no value is "Unknown" (not a dash). */
export function stateWord(e, value) {
  if (value === null || value === undefined || value === '') return 'Unknown';
  if (e?.kind === 'binary_sensor' && (value === 'on' || value === 'off')) {
    const words = BINARY_WORDS[e.deviceClass] ?? ['On', 'Off'];
    return value === 'on' ? words[0] : words[1];
  }
  // A presence tracker's not_home is Away on the card, in the history and in a change's words alike.
  if (e?.kind === 'device_tracker' && (value === 'home' || value === 'not_home')) return value === 'home' ? 'Home' : 'Away';
  return cap(value);
}

/** A light's brightness as a percentage of its range. */
export const brightnessPct = (value, max) => Math.round((value / (max ?? 255)) * 100);

/** The card's big value, in words a person reads: "On · 76%", "21.4 °C", "Open · 40%". */
export function mainValue(e, ctl) {
  const withUnit = (v) => `${fmtValue(v)}${e.unit && typeof v === 'number' ? ` ${e.unit}` : ''}`;
  const a = e.attributes ?? {};
  if (e.kind === 'camera' || e.kind === 'image') return e.frame ? 'Live picture' : 'No picture yet';
  if (e.kind === 'button') return e.updatedAt ? 'Pressed' : 'Button';
  if (e.kind === 'scene') return 'Scene';
  if (e.kind === 'notify') return 'Messages';
  if (e.value === null || e.value === undefined) return '—';
  if (e.kind === 'binary_sensor') return stateWord(e, e.value);
  if (e.kind === 'light' && e.value === 'on' && typeof a.brightness === 'number') {
    return `On · ${brightnessPct(a.brightness, ctl?.scale?.brightness?.max)}%`;
  }
  if ((e.kind === 'cover' || e.kind === 'valve') && typeof a.position === 'number') return `${cap(e.value)} · ${a.position}%`;
  if (e.kind === 'fan' && e.value === 'on' && typeof a.percentage === 'number') return `On · ${a.percentage}%`;
  if (e.kind === 'climate') return typeof a.current_temperature === 'number' ? withUnit(a.current_temperature) : cap(e.value);
  if (e.kind === 'humidifier' && e.value === 'on' && typeof a.humidity === 'number') return `On · target ${a.humidity}%`;
  // A water heater's state is its mode: the water's temperature is what a person asks, the mode goes below.
  if (e.kind === 'water_heater' && typeof a.current_temperature === 'number') return withUnit(a.current_temperature);
  if (e.kind === 'device_tracker') return stateWord(e, e.value);
  if (e.kind === 'update') {
    if (a.in_progress === true) return `Installing ${fmtValue(a.latest_version ?? '')}`.trim();
    return a.latest_version !== undefined && a.latest_version !== null && a.latest_version !== e.value
      ? `${fmtValue(e.value)} → ${fmtValue(a.latest_version)}`
      : `Up to date · ${fmtValue(e.value)}`;
  }
  // A display's text is the words it shows, as they are.
  if (e.kind === 'text') return fmtValue(e.value);
  return typeof e.value === 'number' ? withUnit(e.value) : cap(e.value);
}

/** Attributes read as percentages (0-100), and as fractions shown as percentages (0-1). */
const PERCENT_ATTRS = new Set(['battery_level', 'battery', 'humidity', 'current_humidity', 'percentage', 'position', 'update_percentage']);
const FRACTION_ATTRS = new Set(['volume_level']);

/** One attribute of the details, in words: "battery level 80%", "volume level 50%", "in progress yes", "target 50 °C". */
export function attrWords(e, key, v) {
  // A thermostat's, a water heater's and a humidifier's own setting is the target, not a reading.
  const target = (key === 'temperature' && e.kind !== 'sensor') || (key === 'humidity' && e.kind === 'humidifier');
  const name = target ? `target ${key}` : key.replace(/_/g, ' ');
  let text;
  if (typeof v === 'number' && PERCENT_ATTRS.has(key)) text = `${fmtValue(v)}%`;
  else if (typeof v === 'number' && FRACTION_ATTRS.has(key)) text = `${Math.round(v * 100)}%`;
  else if (typeof v === 'number' && /temperature/.test(key)) text = `${fmtValue(v)}${e.unit ? ` ${e.unit}` : ''}`;
  else if (typeof v === 'boolean') text = v ? 'yes' : 'no';
  else if (typeof v === 'object') text = Array.isArray(v) ? v.map((x) => fmtValue(x)).join(', ') : '…';
  else text = fmtValue(v).replace(/_/g, ' ');
  return [name, text];
}

/** Attributes left for the details (the ones the value and controls already show are out, and a light's colour mode). */
export function detailAttrs(e) {
  const shown = new Set([...COLOR_KEYS, 'color_mode', 'brightness']);
  return Object.entries(e.attributes ?? {}).filter(([k, v]) => v !== null && !(shown.has(k) && e.kind === 'light'));
}

/** The entity a tool call is about: its `entity` argument, or the one entity the tool controls. */
export function entityOfCall(tool, args) {
  const id = typeof args?.entity === 'string' ? args.entity : [...state.controls].find(([, c]) => c.tool === tool)?.[0];
  return id ? state.devices.get(id) : undefined;
}

/** A colour argument as a word: a name stays, "#ff0000" becomes its nearest name. */
function colourWord(c) {
  const m = /^#?([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(String(c));
  return m ? colorName([m[1], m[2], m[3]].map((x) => Number.parseInt(x, 16))) : String(c);
}

/** A call's arguments in words: "Turn on Living room lamp · brightness 76% · colour red". */
export function argsWords(tool, args) {
  const a = args && typeof args === 'object' ? args : {};
  const e = entityOfCall(tool, a);
  const scale = state.controls.get(e?.id)?.scale ?? {};
  const verb = a.action ?? (a.option !== undefined ? 'select' : a.value !== undefined ? 'set' : undefined);
  const head = [verb ? cap(verb) : '', e?.name ?? (typeof a.entity === 'string' ? a.entity : '')].filter(Boolean).join(' ');
  const parts = [];
  for (const [k, v] of Object.entries(a)) {
    if (k === 'action' || k === 'entity') continue;
    // A flow's brightness is on the light's own scale; the tool's own argument is in percent.
    if (k === 'brightness_pct' && typeof v === 'number') parts.push(`brightness ${fmtValue(v)}%`);
    else if (k === 'brightness' && typeof v === 'number') parts.push(`brightness ${brightnessPct(v, scale.brightness?.max)}%`);
    else if ((k === 'color_temp' || k === 'color_temp_kelvin') && typeof v === 'number') parts.push(`colour temperature ${kelvinWords(kelvinOf(v))}`);
    else if (k === 'color') parts.push(`colour ${colourWord(v)}`);
    else if ((k === 'position' || k === 'percentage') && typeof v === 'number') parts.push(`${k === 'position' ? 'position' : 'speed'} ${v}%`);
    else if (k === 'temperature' && typeof v === 'number') parts.push(`target ${fmtValue(v)}${e?.unit ? ` ${e.unit}` : ''}`);
    // A humidifier's target, a siren's volume (0-1) and how long it sounds (#31).
    else if (k === 'humidity' && typeof v === 'number') parts.push(`target humidity ${fmtValue(v)}%`);
    else if (k === 'volume' && typeof v === 'number') parts.push(`volume ${Math.round(v * 100)}%`);
    else if (k === 'duration' && typeof v === 'number') parts.push(`for ${fmtValue(v)} s`);
    else parts.push(`${k.replace(/_/g, ' ')} ${typeof v === 'object' ? JSON.stringify(v) : fmtValue(v).replace(/_/g, ' ')}`);
  }
  return [head || tool, ...parts].join(' · ');
}

/**
 * A tool's result text (the agent's reading, exact for a model) as a person reads it: no ids in brackets,
 * brightness as a percentage, a colour by its name without its coordinates, no "updated … ago" tail.
 */
export function readableResult(text) {
  return String(text ?? '')
    .replace(/"([^"\n]{1,80})" \([\w.:-]+(?:, area "[^"\n]{1,40}")?\)/g, '$1')
    .replace(/brightness (\d+) of (\d+)/g, (_, v, max) => `brightness ${brightnessPct(Number(v), Number(max))}%`)
    .replace(/colour about ([a-z][a-z ]*?) \([^()]*\)/g, 'colour $1')
    .replace(/colour temperature about (\d+) K \(([^()]+)\)/g, 'colour temperature $2 · $1 K')
    .replace(/; updated (?:just now|[^;.]+ ago)/g, '')
    .replace(/; online\./g, '.')
    .replace(/^(confirmed|unconfirmed|failed|not allowed|needs approval|not done): /i, '');
}
