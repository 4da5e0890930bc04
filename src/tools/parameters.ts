// The JSON Schema of an actuator tool's arguments, from the device's real
// ranges and options, and turning validated arguments into a logical command.
import { COLOR_NAMES, parseColor } from '../devices/color.js';
import { COLOR_TEMP_WORDS, colorTempRangeText } from '../devices/color-temp.js';
import { actionsOf, hasPosition } from '../devices/actions.js';
import type { Command } from '../devices/commands.js';
import { MAX_MESSAGE_CHARS, MAX_TEXT_CHARS } from '../devices/defaults.js';
import type { Entity, Range } from '../devices/model.js';
import { deviceWord } from './device-text.js';
import type { JsonSchema } from './types.js';
import { percentOfRange } from './units.js';

function numberSchema(range: Range, description: string): JsonSchema {
  const integral = Number.isInteger(range.min) && Number.isInteger(range.max) && (range.step === undefined || Number.isInteger(range.step));
  return {
    type: integral ? 'integer' : 'number',
    minimum: range.min,
    maximum: range.max,
    ...(range.step && range.step !== 1 ? { multipleOf: range.step } : {}),
    description,
  };
}

/** A light that takes colours: a colour mode, and JSON commands or a topic for that mode. */
export function hasColor(entity: Entity): boolean {
  const mode = entity.colorModes?.[0];
  return entity.kind === 'light' && !!mode && (entity.commandFormat === 'json' || !!entity.commandTopics[mode]);
}

export const COLOR_SCHEMA: JsonSchema = {
  type: 'string',
  maxLength: 32,
  description: `A colour, only with turn_on: a name (${Object.keys(COLOR_NAMES).join(', ')}) or #rrggbb.`,
};

/** A light that takes a colour temperature (in kelvin, whatever it speaks). */
export function hasColorTemp(entity: Entity): boolean {
  return entity.kind === 'light' && !!entity.colorTemp;
}

function colorTempSchema(entity: Entity): JsonSchema {
  const { minKelvin, maxKelvin } = entity.colorTemp!;
  const words = Object.entries(COLOR_TEMP_WORDS)
    .map(([w, k]) => `${w} ${k}`)
    .join(', ');
  return numberSchema(
    { min: minKelvin, max: maxKelvin, step: 1 },
    `Colour temperature of white light in kelvin, ${minKelvin} to ${maxKelvin} on this light (${words}); only with turn_on, not with color.`,
  );
}

/** A light's brightness as people say it (Home Assistant's light.turn_on `brightness_pct`): 1% is dim, not off. */
const BRIGHTNESS_PCT_SCHEMA: JsonSchema = {
  type: 'number',
  minimum: 1,
  maximum: 100,
  description: 'Brightness in percent, 1 to 100; only with turn_on.',
};

/**
 * What a light's tool takes without advertising it (the model is shown brightness_pct and color_temp_kelvin):
 * `brightness` on the light's own scale (0 to 254 on most Zigbee lights) and `color_temp`, the earlier name of
 * color_temp_kelvin, as Node-RED flows and `hearth call` sent them before issue 41. Checked by toCommand.
 */
export const UNADVERTISED_LIGHT_ARGUMENTS: readonly string[] = ['brightness', 'color_temp'];

function hasBrightness(entity: Entity): boolean {
  return entity.kind === 'light' && ('brightness' in entity.ranges || 'brightness' in entity.attributes);
}

/** Longest a siren may be asked to sound. */
export const MAX_SIREN_SECONDS = 600;

/** Does this siren take a volume or a duration (Home Assistant: support_volume_set, support_duration)? Its ranges say. */
function takesSirenParameter(entity: Entity, name: 'volume' | 'duration'): boolean {
  return (name === 'volume' ? 'volume_level' : 'duration') in entity.ranges;
}

/** A text entity's length bounds, within Hearth's own. */
function textLength(entity: Entity): Range {
  const r = entity.ranges.length ?? { min: 0, max: MAX_TEXT_CHARS };
  return { min: Math.max(0, r.min), max: Math.min(MAX_TEXT_CHARS, r.max) };
}

/** The actions this entity really offers (src/devices/actions.ts). */
export { actionsOf };

/** Properties (other than `entity`) an actuator tool for this entity takes. */
export function actuatorProperties(entity: Entity): { properties: Record<string, JsonSchema>; required: string[] } {
  const actions = actionsOf(entity);
  switch (entity.kind) {
    case 'switch':
    case 'lock':
      return { properties: { action: { enum: actions } }, required: ['action'] };
    case 'light': {
      const props: Record<string, JsonSchema> = { action: { enum: actions } };
      if (hasBrightness(entity)) props.brightness_pct = BRIGHTNESS_PCT_SCHEMA;
      if (hasColor(entity)) props.color = COLOR_SCHEMA;
      if (hasColorTemp(entity)) props.color_temp_kelvin = colorTempSchema(entity);
      return { properties: props, required: ['action'] };
    }
    case 'fan': {
      const props: Record<string, JsonSchema> = { action: { enum: actions } };
      if (actions.includes('set_percentage')) {
        const r = entity.ranges.percentage ?? { min: 0, max: 100 };
        props.percentage = numberSchema(r, `Fan speed, ${r.min} to ${r.max}; for set_percentage.`);
      }
      if (actions.includes('set_preset_mode')) props.preset_mode = { enum: entity.options.preset_mode, description: 'Preset mode, for set_preset_mode.' };
      return { properties: props, required: ['action'] };
    }
    case 'alarm_control_panel':
      return { properties: { action: { enum: actions } }, required: ['action'] };
    case 'valve':
    case 'cover': {
      const props: Record<string, JsonSchema> = { action: { enum: actions } };
      if (hasPosition(entity)) {
        const r = entity.ranges.position ?? { min: 0, max: 100 };
        props.position = numberSchema(r, `Target position for set_position, ${r.min} (closed) to ${r.max} (open).`);
      }
      return { properties: props, required: ['action'] };
    }
    case 'climate': {
      const props: Record<string, JsonSchema> = { action: { enum: actions } };
      if (entity.options.mode?.length) props.mode = { enum: entity.options.mode, description: 'HVAC mode, for set_mode.' };
      if (entity.ranges.temperature) {
        const r = entity.ranges.temperature;
        props.temperature = numberSchema(r, `Target temperature${entity.unit ? ` in ${deviceWord(entity.unit, 16)}` : ''}, for set_temperature.`);
      }
      return { properties: props, required: ['action'] };
    }
    case 'number': {
      const r = entity.ranges.value ?? { min: 0, max: 100 };
      return {
        properties: { value: numberSchema(r, `New value${entity.unit ? ` in ${deviceWord(entity.unit, 16)}` : ''}, ${r.min} to ${r.max}.`) },
        required: ['value'],
      };
    }
    case 'select':
      return { properties: { option: { enum: entity.options.value ?? [] } }, required: ['option'] };
    case 'button':
    case 'scene':
      return { properties: {}, required: [] };
    case 'vacuum': {
      const props: Record<string, JsonSchema> = { action: { enum: actions } };
      if (actions.includes('set_fan_speed')) props.fan_speed = { enum: entity.options.fan_speed, description: 'Suction power, for set_fan_speed.' };
      return { properties: props, required: ['action'] };
    }
    case 'lawn_mower':
    case 'update':
      return { properties: { action: { enum: actions } }, required: ['action'] };
    case 'siren': {
      const props: Record<string, JsonSchema> = { action: { enum: actions } };
      if (entity.options.tone?.length) props.tone = { enum: entity.options.tone, description: 'Tone, only with turn_on.' };
      if (takesSirenParameter(entity, 'volume')) props.volume = { type: 'number', minimum: 0, maximum: 1, description: 'Volume 0 to 1, only with turn_on.' };
      if (takesSirenParameter(entity, 'duration')) {
        props.duration = { type: 'integer', minimum: 1, maximum: MAX_SIREN_SECONDS, description: 'Seconds to sound, only with turn_on.' };
      }
      return { properties: props, required: ['action'] };
    }
    case 'humidifier': {
      const props: Record<string, JsonSchema> = { action: { enum: actions } };
      const r = entity.ranges.humidity ?? { min: 0, max: 100 };
      if (actions.includes('set_humidity')) props.humidity = numberSchema(r, `Target humidity in %, ${r.min} to ${r.max}; for set_humidity.`);
      if (actions.includes('set_mode')) props.mode = { enum: entity.options.mode, description: 'Mode, for set_mode.' };
      return { properties: props, required: ['action'] };
    }
    case 'water_heater': {
      const props: Record<string, JsonSchema> = { action: { enum: actions } };
      if (actions.includes('set_temperature')) {
        const r = entity.ranges.temperature!;
        props.temperature = numberSchema(r, `Target water temperature${entity.unit ? ` in ${deviceWord(entity.unit, 16)}` : ''}, for set_temperature.`);
      }
      if (actions.includes('set_mode')) props.mode = { enum: entity.options.mode, description: 'Operation mode, for set_mode.' };
      if (actions.includes('set_away')) props.away = { type: 'boolean', description: 'Away mode on (true) or off (false), for set_away.' };
      return { properties: props, required: ['action'] };
    }
    case 'text': {
      const r = textLength(entity);
      return {
        properties: { text: { type: 'string', minLength: r.min, maxLength: r.max, description: `The text to set, ${r.min} to ${r.max} characters.` } },
        required: ['text'],
      };
    }
    case 'notify':
      return {
        properties: {
          message: { type: 'string', minLength: 1, maxLength: MAX_MESSAGE_CHARS, description: `The message to send, at most ${MAX_MESSAGE_CHARS} characters.` },
        },
        required: ['message'],
      };
    default:
      return { properties: {}, required: [] };
  }
}

export class ArgumentError extends Error {}

/** A number argument, or an error naming it (a flow may send anything: "abc" must not pass as NaN). */
function finite(key: string, value: unknown): number {
  const n = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN;
  if (!Number.isFinite(n)) throw new ArgumentError(`"${key}" must be a number (got ${JSON.stringify(value)?.slice(0, 40)})`);
  return n;
}

/**
 * Why a colour temperature is not one this light takes, in kelvin with its range ("must be from 2200 to 6500 K
 * for this light (got 9000 K)"), or undefined when it is. The schema's bare "must be <= 6500" would not say kelvin.
 */
export function colorTempOutOfRange(entity: Entity, value: unknown): string | undefined {
  const ct = entity.colorTemp;
  if (!ct) return undefined;
  const kelvin = typeof value === 'number' ? value : NaN;
  if (Number.isFinite(kelvin) && kelvin >= ct.minKelvin && kelvin <= ct.maxKelvin) return undefined;
  return `must be from ${colorTempRangeText(ct)} for this light (got ${typeof value === 'number' ? `${value} K` : JSON.stringify(value)?.slice(0, 40)})`;
}

// Text for a display or a speaker: printable, newlines and tabs allowed.
// What a text or message must not carry to a display or speaker: C0 and C1 controls (ESC and CSI start terminal
// escapes), and the characters that make text read other than it is (bidi overrides and isolates, line and
// paragraph separators, Unicode tags). A message keeps its line breaks; emoji joiners and variation selectors stay.
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\u{e0000}-\u{e007f}]/u;

/** How many of an entity's options an answer names. */
const MAX_CHOICES_SHOWN = 30;

/** One of an entity's options, or an error naming the valid ones (grouped tools take any string and check here). */
function oneOf(key: string, value: string, options: string[] | undefined): string {
  const valid = options ?? [];
  if (!valid.includes(value)) {
    // The options are the device's words: marked as device data, and no more of them than choicesText shows.
    const shown = valid.slice(0, MAX_CHOICES_SHOWN).map((v) => deviceWord(v, 40));
    const more = valid.length > MAX_CHOICES_SHOWN ? ` (+${valid.length - MAX_CHOICES_SHOWN} more)` : '';
    throw new ArgumentError(
      `"${key}" must be one of ${shown.length ? `${shown.join(', ')}${more}` : '(none: this device has no options)'} (got ${value.slice(0, 60)})`,
    );
  }
  return value;
}

/** Validated arguments -> the command, with the checks a schema cannot express. */
export function toCommand(entity: Entity, args: Record<string, unknown>): Command {
  const actions = actionsOf(entity);
  const need = (key: string, action: string) => {
    if (args[key] === undefined) throw new ArgumentError(`${action} needs "${key}"`);
    return args[key];
  };
  const inRange = (key: string, value: number, range: Range | undefined) => {
    if (!range) return value;
    if (value < range.min || value > range.max) {
      throw new ArgumentError(`"${key}" must be between ${range.min} and ${range.max} for this device (got ${value})`);
    }
    if (range.step && Math.abs(Math.round((value - range.min) / range.step) * range.step + range.min - value) > 1e-9) {
      throw new ArgumentError(`"${key}" must be a multiple of ${range.step} for this device (got ${value})`);
    }
    return value;
  };
  switch (entity.kind) {
    case 'number':
      return { action: 'set_value', value: inRange('value', Number(need('value', 'set_value')), entity.ranges.value) };
    case 'select': {
      return { action: 'select_option', option: oneOf('option', String(need('option', 'select_option')), entity.options.value) };
    }
    case 'button':
      return { action: 'press' };
    case 'scene':
      return { action: 'activate' };
    case 'text': {
      const text = need('text', 'set_text');
      if (typeof text !== 'string') throw new ArgumentError('"text" must be a string');
      const r = textLength(entity);
      if (text.length < r.min || text.length > r.max)
        throw new ArgumentError(`"text" must be ${r.min} to ${r.max} characters for this device (got ${text.length})`);
      if (CONTROL.test(text) || text.includes('\n')) throw new ArgumentError('"text" must be one line without control or hidden characters');
      return { action: 'set_text', text };
    }
    case 'notify': {
      const message = need('message', 'send_message');
      if (typeof message !== 'string' || !message.trim()) throw new ArgumentError('"message" must be a non-empty string');
      if (message.length > MAX_MESSAGE_CHARS) throw new ArgumentError(`"message" must be at most ${MAX_MESSAGE_CHARS} characters (got ${message.length})`);
      if (CONTROL.test(message)) throw new ArgumentError('"message" must not hold control or hidden characters (line breaks are fine)');
      return { action: 'send_message', message };
    }
  }
  const action = String(args.action ?? '');
  if (!actions.includes(action)) throw new ArgumentError(`"action" must be one of ${actions.join(', ')} for this device (got ${action || 'nothing'})`);
  const stray = (allowed: string[]) => {
    const extra = Object.keys(args).filter((k) => k !== 'action' && k !== 'entity' && !allowed.includes(k));
    if (extra.length) throw new ArgumentError(`${action} does not take ${extra.map((k) => `"${k}"`).join(', ')}`);
  };
  switch (action) {
    case 'turn_on': {
      if (entity.kind === 'siren') {
        stray(['tone', 'volume', 'duration']);
        const cmd: Extract<Command, { action: 'turn_on' }> = { action };
        if (args.tone !== undefined) cmd.tone = oneOf('tone', String(args.tone), entity.options.tone);
        if (args.volume !== undefined) {
          if (!takesSirenParameter(entity, 'volume')) throw new ArgumentError('this siren takes no volume');
          cmd.volume = inRange('volume', Number(args.volume), { min: 0, max: 1 });
        }
        if (args.duration !== undefined) {
          if (!takesSirenParameter(entity, 'duration')) throw new ArgumentError('this siren takes no duration');
          const r = entity.ranges.duration!;
          cmd.duration = inRange('duration', Number(args.duration), { min: Math.max(1, r.min), max: Math.min(MAX_SIREN_SECONDS, r.max), step: 1 });
        }
        return cmd;
      }
      stray(['brightness_pct', 'color', 'color_temp_kelvin', ...UNADVERTISED_LIGHT_ARGUMENTS]);
      const cmd: Extract<Command, { action: 'turn_on' }> = { action };
      if (args.brightness_pct !== undefined && args.brightness !== undefined)
        throw new ArgumentError('give "brightness_pct" (percent) or "brightness" (the light\'s own scale), not both');
      if (args.brightness_pct !== undefined || args.brightness !== undefined) {
        if (!hasBrightness(entity)) throw new ArgumentError('this device has no brightness');
      }
      const range = entity.ranges.brightness ?? { min: 0, max: 255 };
      if (args.brightness_pct !== undefined) {
        // The one place a percentage becomes the light's own scale (the grouped call's members come here too).
        const pct = finite('brightness_pct', args.brightness_pct);
        if (pct < 1 || pct > 100) throw new ArgumentError(`"brightness_pct" must be from 1 to 100 percent (got ${pct})`);
        cmd.brightness = percentOfRange(pct, range);
      }
      if (args.brightness !== undefined) cmd.brightness = inRange('brightness', finite('brightness', args.brightness), entity.ranges.brightness);
      if (args.color !== undefined) {
        if (!hasColor(entity)) throw new ArgumentError('this light takes no colour');
        const color = String(args.color).trim().toLowerCase();
        if (!parseColor(color))
          throw new ArgumentError(
            `unknown colour ${JSON.stringify(args.color)}: use a name (${Object.keys(COLOR_NAMES).slice(0, 8).join(', ')}, ...) or #rrggbb`,
          );
        cmd.color = color;
      }
      if (args.color_temp_kelvin !== undefined && args.color_temp !== undefined)
        throw new ArgumentError('give "color_temp_kelvin" or "color_temp" (its earlier name), not both');
      const kelvinKey = args.color_temp !== undefined ? 'color_temp' : 'color_temp_kelvin';
      if (args[kelvinKey] !== undefined) {
        if (!hasColorTemp(entity)) throw new ArgumentError('this light takes no colour temperature');
        if (cmd.color !== undefined) throw new ArgumentError(`give "color" or "${kelvinKey}", not both`);
        const said = colorTempOutOfRange(entity, args[kelvinKey]);
        if (said) throw new ArgumentError(`"${kelvinKey}" ${said}`);
        cmd.color_temp = Math.round(Number(args[kelvinKey]));
      }
      return cmd;
    }
    case 'set_position':
      stray(['position']);
      return { action, position: inRange('position', Number(need('position', action)), entity.ranges.position) };
    case 'set_mode': {
      stray(['mode']);
      return { action, mode: oneOf('mode', String(need('mode', action)), entity.options.mode) };
    }
    case 'set_percentage':
      stray(['percentage']);
      return { action, percentage: inRange('percentage', Number(need('percentage', action)), entity.ranges.percentage ?? { min: 0, max: 100 }) };
    case 'set_preset_mode': {
      stray(['preset_mode']);
      return { action, preset_mode: oneOf('preset_mode', String(need('preset_mode', action)), entity.options.preset_mode) };
    }
    case 'set_fan_speed':
      stray(['fan_speed']);
      return { action, fan_speed: oneOf('fan_speed', String(need('fan_speed', action)), entity.options.fan_speed) };
    case 'set_humidity':
      stray(['humidity']);
      return { action, humidity: inRange('humidity', Number(need('humidity', action)), entity.ranges.humidity ?? { min: 0, max: 100 }) };
    case 'set_away': {
      stray(['away']);
      const away = need('away', action);
      if (typeof away !== 'boolean') throw new ArgumentError('"away" must be true or false');
      return { action, away };
    }
    case 'set_temperature':
      stray(['temperature']);
      return { action, temperature: inRange('temperature', Number(need('temperature', action)), entity.ranges.temperature) };
    default:
      stray([]);
      return { action } as Command;
  }
}

/** Which argument takes which of an entity's options (grouped tools take any string; the entity's own are these). */
const OPTION_ARGUMENTS: Array<[argument: string, option: string]> = [
  ['option', 'value'],
  ['mode', 'mode'],
  ['preset_mode', 'preset_mode'],
  ['fan_speed', 'fan_speed'],
  ['tone', 'tone'],
];

/**
 * An entity's own choices as a line a model reads (`mode one of heat, cool, off; preset_mode one of eco`), for find_entities
 * and get_state: the grouped tools' schemas do not list them. Bounded: device data, quoted by deviceWord.
 */
export function choicesText(entity: Entity): string {
  const parts: string[] = [];
  for (const [argument, option] of OPTION_ARGUMENTS) {
    const values = entity.options[option];
    if (!values?.length || !ACTUATOR_ARGUMENT_KINDS.has(entity.kind)) continue;
    const shown = values.slice(0, MAX_CHOICES_SHOWN).map((v) => deviceWord(v, 40));
    parts.push(`${argument} one of ${shown.join(', ')}${values.length > MAX_CHOICES_SHOWN ? ` (+${values.length - MAX_CHOICES_SHOWN} more)` : ''}`);
  }
  return parts.join('; ');
}

const ACTUATOR_ARGUMENT_KINDS: ReadonlySet<string> = new Set(['select', 'climate', 'fan', 'vacuum', 'siren', 'humidifier', 'water_heater']);
