// An entity's state as the text a model reads. Device strings are quoted data.
import { COLOR_ATTRIBUTES, nearestColorName } from '../devices/color.js';
import { colorTempWord, fromDeviceColorTemp } from '../devices/color-temp.js';
import { type Entity, FRAME_KINDS } from '../devices/model.js';
import type { EntityState } from '../devices/state-cache.js';
import { formatAge } from '../util/time.js';
import { deviceWord, quoted } from './device-text.js';

const ATTRIBUTE_LABEL: Record<string, string> = {
  temperature: 'target temperature',
  current_temperature: 'current temperature',
  brightness: 'brightness',
  position: 'position',
  action: 'activity',
  battery_level: 'battery',
  humidity: 'target humidity',
  current_humidity: 'current humidity',
  installed_version: 'installed version',
  latest_version: 'latest version',
  in_progress: 'installing',
  color_x: 'x',
  color_y: 'y',
};

const WORD_KINDS: ReadonlySet<string> = new Set(['vacuum', 'siren', 'humidifier', 'water_heater']);
const WORD_ATTRIBUTES: ReadonlySet<string> = new Set(['fan_speed', 'tone', 'mode', 'action']);

/** What the main value is, where the bare value would not say. */
const MAIN_LABEL: Partial<Record<Entity['kind'], string>> = {
  climate: 'mode ',
  water_heater: 'mode ',
  event: 'last event ',
  update: 'installed version ',
  text: 'text ',
};

function valueText(entity: Entity, value: unknown, key?: string): string {
  if (value === null || value === undefined) return 'unknown';
  if (typeof value === 'string') {
    // Logical states are our words; anything else the device said is quoted data.
    const own =
      /^(on|off|open|closed|opening|closing|stopped|locked|unlocked|locking|unlocking|jammed|disarmed|armed_[a-z_]+|arming|disarming|pending|triggered|cleaning|docked|paused|idle|returning|error|mowing|home|not_home)$/.test(
        value,
      ) &&
      entity.kind !== 'text' &&
      entity.kind !== 'event' &&
      entity.kind !== 'update';
    if (own) return value;
    // A thermostat's modes and activities are device words: bare when one token, quoted otherwise.
    if (entity.kind === 'climate' && (!key || key === 'action')) return deviceWord(value);
    // Likewise a vacuum's fan speed, a siren's tone, a humidifier's or water heater's mode.
    if (key ? WORD_ATTRIBUTES.has(key) && WORD_KINDS.has(entity.kind) : entity.kind === 'water_heater' || entity.kind === 'event') return deviceWord(value);
    return quoted(value, 80);
  }
  const unit = entity.unit && (key === undefined || key === 'temperature' || key === 'current_temperature') ? ` ${deviceWord(entity.unit, 16)}` : '';
  if (key === 'position' || key === 'battery_level' || key === 'humidity' || key === 'current_humidity') return `${value}%`;
  // A percentage for people, and the light's own scale, which its tool takes, for the model.
  if (key === 'brightness' && entity.ranges.brightness) {
    const { max } = entity.ranges.brightness;
    return typeof value === 'number' && max > 0 ? `${Math.round((value / max) * 100)}% (${value} of ${max})` : `${value} of ${max}`;
  }
  return `${value}${unit}`;
}

/** What we can say of the age of a retained value: nothing, and why. */
export const RETAINED_AGE = 'reported before Hearth subscribed (kept by the broker; age unknown)';

/** `"Kitchen light" (kitchen_light.light, area "Kitchen"): on, brightness 71% (180 of 254); updated 3 s ago; online.` */
export function stateText(entity: Entity, state: EntityState | undefined, now = Date.now()): string {
  const head = `${quoted(entity.name)} (${entity.id}${entity.area ? `, area ${quoted(entity.area, 40)}` : ''})`;
  if (!state || (state.value === undefined && Object.keys(state.attributes).length === 0 && !state.frame)) {
    return `${head}: no state reported yet${availabilityText(state)}.`;
  }
  const parts: string[] = [];
  if (FRAME_KINDS.has(entity.kind)) {
    parts.push(state.frame ? `latest frame ${Math.round(state.frame.bytes.length / 1024)} KiB ${state.frame.contentType}` : 'no frame yet');
  } else {
    parts.push(...valueParts(entity, state));
  }
  const when = !state.updatedAt ? '' : state.retained ? `; ${RETAINED_AGE}` : `; updated ${formatAge(now - state.updatedAt)}`;
  return `${head}: ${parts.join(', ')}${when}${availabilityText(state)}.`;
}

/** The value and attributes as words (`on`, `brightness 71% (180 of 254)`, `colour temperature about 2700 K (warm white)`): the agent's and the terminal's reading. */
export function valueParts(entity: Entity, state: EntityState): string[] {
  const parts: string[] = [];
  const main =
    entity.kind === 'binary_sensor' && entity.deviceClass
      ? `${deviceWord(entity.deviceClass)} ${valueText(entity, state.value)}`
      : valueText(entity, state.value);
  if (state.value !== undefined) parts.push(`${MAIN_LABEL[entity.kind] ?? ''}${main}`);
  // A light shows a colour or a white by colour temperature (its color_mode says which, when it reports one):
  // that one reads as words, and the other's left-over numbers are not read out.
  const kelvin = entity.kind === 'light' && entity.colorTemp ? fromDeviceColorTemp(entity.colorTemp, state.attributes.color_temp) : undefined;
  const mode = entity.kind === 'light' ? state.attributes.color_mode : undefined;
  const whiteByTemp = kelvin !== undefined && (mode === undefined || mode === 'color_temp');
  const color = entity.kind === 'light' && mode !== 'color_temp' ? nearestColorName(state.attributes) : undefined;
  const colorParts: string[] = [];
  for (const [k, v] of Object.entries(state.attributes)) {
    if (entity.kind === 'light' && mode !== undefined && k === 'color_mode') continue;
    if (entity.kind === 'light' && entity.colorTemp && k === 'color_temp' && (whiteByTemp || mode !== undefined)) continue;
    if (mode === 'color_temp' && COLOR_ATTRIBUTES.has(k)) continue;
    // Zigbee2MQTT's lock_state beside a lock's state says it twice ("locked, lock state locked"); it speaks only when
    // it differs ("unlocked, lock state not fully locked": a bolt that did not go home, or one still moving).
    if (entity.kind === 'lock' && k === 'lock_state' && v === state.value) continue;
    const text = `${ATTRIBUTE_LABEL[k] ?? k.replace(/_/g, ' ')} ${valueText(entity, v, k)}`;
    if (color && COLOR_ATTRIBUTES.has(k)) colorParts.push(text);
    else parts.push(text);
  }
  if (color) parts.push(`colour about ${color} (${colorParts.join(', ')})`);
  if (whiteByTemp) parts.push(`colour temperature about ${Math.round(kelvin! / 100) * 100} K (${colorTempWord(kelvin!)})`);
  return parts;
}

function availabilityText(state: EntityState | undefined): string {
  if (!state || state.available === null) return '; availability not reported yet';
  return state.available ? '; online' : '; OFFLINE (the device says it is unavailable)';
}
