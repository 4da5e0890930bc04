// People's units at the tool boundary, in one place: a model that writes a value the way people say it ("80%"
// for a brightness, "2700K" or "370 mireds" for a white, "21 °C", "40%" for a blind) gets it converted to what
// the tool takes; a value in a unit the tool does not take is refused naming the unit it wants. Numbers pass as
// they are (a light's tool takes brightness_pct and color_temp_kelvin, as Home Assistant's light.turn_on; the
// light's own scale is reached in toCommand). Run before the schema check.
import { colorTempRangeText } from '../devices/color-temp.js';
import type { Entity, Range } from '../devices/model.js';

/** A percentage of a range, on that range's steps; at least one step above the bottom (1% is dim, not dark). */
export function percentOfRange(percent: number, r: Range): number {
  const step = r.step && r.step > 0 ? r.step : 1;
  const raw = r.min + (percent / 100) * (r.max - r.min);
  if (percent <= 0) return r.min;
  return Math.min(r.max, Math.max(r.min + step, r.min + Math.round((raw - r.min) / step) * step));
}

const NUMBER = String.raw`([-+]?\d+(?:[.,]\d+)?)`;
const num = (s: string) => Number(s.replace(',', '.'));

/** "80%", "80 %", "80 percent" -> 80. */
function percent(v: string): number | undefined {
  const m = new RegExp(`^${NUMBER}\\s*(?:%|percent|pct)$`, 'i').exec(v.trim());
  return m ? num(m[1]!) : undefined;
}

/** A bare number written as text ("21.5"): not a unit to convert; the schema answers it (a number, not text). */
function bare(v: string): boolean {
  return new RegExp(`^${NUMBER}$`).test(v.trim());
}

/** "21°C", "21 C", "21 degrees": the number and the unit as written (lowercased, no degree sign). */
function withUnit(v: string): { n: number; unit: string } | undefined {
  const m = new RegExp(`^${NUMBER}\\s*(°?\\s*[a-zA-Z%µ/²³]*)$`).exec(v.trim());
  return m ? { n: num(m[1]!), unit: m[2]!.replace(/[°\s]/g, '').toLowerCase() } : undefined;
}

/** The arguments with people's units converted (a number written as bare text is left for the schema to refuse), or why one cannot be (naming the unit wanted). */
export function convertUnits(entity: Entity | undefined, args: Record<string, unknown>): Record<string, unknown> | string {
  if (!args || typeof args !== 'object' || Array.isArray(args)) return args;
  let out: Record<string, unknown> | undefined;
  const set = (k: string, v: unknown) => {
    out ??= { ...args };
    out[k] = v;
  };
  for (const [key, value] of Object.entries(args)) {
    // A kelvin the light cannot make is refused in kelvin, with its range (the schema would say only "<= 6500").
    if ((key === 'color_temp_kelvin' || key === 'color_temp') && typeof value === 'number' && entity?.colorTemp) {
      const { minKelvin, maxKelvin } = entity.colorTemp;
      if (value < minKelvin || value > maxKelvin)
        return `"${key}" must be from ${colorTempRangeText(entity.colorTemp)} for this light (got ${value} K${value < 1000 ? ': a kelvin, not mireds' : ''})`;
    }
    if (typeof value !== 'string') continue;
    switch (key) {
      case 'brightness': {
        // The light's own scale (flows, `hearth call`); "80%" here means brightness_pct, what the tool advertises.
        if (!entity) break;
        const r = entity.ranges.brightness ?? { min: 0, max: 255 };
        const p = percent(value);
        if (p !== undefined && p > 0 && p <= 100 && args.brightness_pct === undefined) {
          set('brightness_pct', p);
          delete out![key];
        } else if (!bare(value))
          return `"brightness" takes a number on this light's own scale, ${r.min} to ${r.max}; give a percentage as "brightness_pct", such as 80 (got ${JSON.stringify(value.slice(0, 40))})`;
        break;
      }
      case 'brightness_pct':
      case 'position':
      case 'percentage': {
        const p = percent(value);
        if (p !== undefined) set(key, p);
        else if (!bare(value))
          return `"${key}" takes a percentage, ${key === 'brightness_pct' ? '1' : '0'} to 100, such as 40 or "40%" (got ${JSON.stringify(value.slice(0, 40))})`;
        break;
      }
      case 'color_temp_kelvin':
      case 'color_temp': {
        if (!entity) break;
        const u = withUnit(value);
        if (bare(value)) break;
        let kelvin: number;
        if (u && (u.unit === 'k' || u.unit === 'kelvin')) kelvin = u.n;
        else if (u && /^mireds?$|^mired$|^mirek$/.test(u.unit) && u.n > 0) kelvin = Math.round(1_000_000 / u.n);
        else return `"${key}" is in kelvin, such as 2700 (warm) or 6500 (daylight) (got ${JSON.stringify(value.slice(0, 40))})`;
        const ct = entity.colorTemp;
        if (ct && (kelvin < ct.minKelvin || kelvin > ct.maxKelvin)) return `"${key}" must be from ${colorTempRangeText(ct)} for this light (got ${kelvin} K)`;
        set(key, kelvin);
        break;
      }
      case 'temperature':
      case 'target_temp_low':
      case 'target_temp_high':
      case 'value': {
        if (!entity) break;
        const u = withUnit(value);
        const want = (entity.unit ?? (key === 'value' ? '' : '°C')).replace(/[°\s]/g, '').toLowerCase();
        const same = (unit: string) =>
          unit === '' || unit === want || (want === 'c' && /^(c|celsius|degrees?)$/.test(unit)) || (want === 'f' && /^(f|fahrenheit)$/.test(unit));
        if (bare(value)) break;
        if (u && same(u.unit)) set(key, u.n);
        else
          return `"${key}" is in ${entity.unit ?? (key === 'value' ? "the device's own unit" : '°C')}, a number such as ${key === 'value' ? 10 : 21} (got ${JSON.stringify(value.slice(0, 40))})`;
        break;
      }
    }
  }
  return out ?? args;
}
