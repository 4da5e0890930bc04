// The JSON Schema of an actuator tool's arguments, from the device's real
// ranges and options, and turning validated arguments into a logical command.
import { COLOR_NAMES, parseColor } from '../devices/color.js';
import { COLOR_TEMP_WORDS, colorTempRangeText } from '../devices/color-temp.js';
import { actionsOf, hasPosition } from '../devices/actions.js';
import type { Command } from '../devices/commands.js';
import type { Entity, Range } from '../devices/model.js';
import { deviceWord } from './device-text.js';
import type { JsonSchema } from './types.js';

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

function hasBrightness(entity: Entity): boolean {
  return entity.kind === 'light' && ('brightness' in entity.ranges || 'brightness' in entity.attributes);
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
      if (hasBrightness(entity)) {
        const r = entity.ranges.brightness ?? { min: 0, max: 255 };
        props.brightness = numberSchema(r, `Brightness on this light's own scale, ${r.min} to ${r.max}; only with turn_on.`);
      }
      if (hasColor(entity)) props.color = COLOR_SCHEMA;
      if (hasColorTemp(entity)) props.color_temp = colorTempSchema(entity);
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
      return { properties: {}, required: [] };
    default:
      return { properties: {}, required: [] };
  }
}

export class ArgumentError extends Error {}

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
      const option = String(need('option', 'select_option'));
      const options = entity.options.value ?? [];
      if (!options.includes(option)) throw new ArgumentError(`"option" must be one of ${options.join(', ')} (got ${option})`);
      return { action: 'select_option', option };
    }
    case 'button':
      return { action: 'press' };
  }
  const action = String(args.action ?? '');
  if (!actions.includes(action)) throw new ArgumentError(`"action" must be one of ${actions.join(', ')} for this device (got ${action || 'nothing'})`);
  const stray = (allowed: string[]) => {
    const extra = Object.keys(args).filter((k) => k !== 'action' && k !== 'entity' && !allowed.includes(k));
    if (extra.length) throw new ArgumentError(`${action} does not take ${extra.map((k) => `"${k}"`).join(', ')}`);
  };
  switch (action) {
    case 'turn_on': {
      stray(['brightness', 'color', 'color_temp']);
      const cmd: Extract<Command, { action: 'turn_on' }> = { action };
      if (args.brightness !== undefined) {
        if (!hasBrightness(entity)) throw new ArgumentError('this device has no brightness');
        cmd.brightness = inRange('brightness', Number(args.brightness), entity.ranges.brightness);
      }
      if (args.color !== undefined) {
        if (!hasColor(entity)) throw new ArgumentError('this light takes no colour');
        const color = String(args.color).trim().toLowerCase();
        if (!parseColor(color))
          throw new ArgumentError(
            `unknown colour ${JSON.stringify(args.color)}: use a name (${Object.keys(COLOR_NAMES).slice(0, 8).join(', ')}, ...) or #rrggbb`,
          );
        cmd.color = color;
      }
      if (args.color_temp !== undefined) {
        if (!hasColorTemp(entity)) throw new ArgumentError('this light takes no colour temperature');
        if (cmd.color !== undefined) throw new ArgumentError('give "color" or "color_temp", not both');
        const kelvin = Number(args.color_temp);
        const ct = entity.colorTemp!;
        if (!Number.isFinite(kelvin) || kelvin < ct.minKelvin || kelvin > ct.maxKelvin) {
          throw new ArgumentError(`"color_temp" must be from ${colorTempRangeText(ct)} for this light (got ${String(args.color_temp)})`);
        }
        cmd.color_temp = Math.round(kelvin);
      }
      return cmd;
    }
    case 'set_position':
      stray(['position']);
      return { action, position: inRange('position', Number(need('position', action)), entity.ranges.position) };
    case 'set_mode': {
      stray(['mode']);
      const mode = String(need('mode', action));
      const modes = entity.options.mode ?? [];
      if (!modes.includes(mode)) throw new ArgumentError(`"mode" must be one of ${modes.join(', ')} (got ${mode})`);
      return { action, mode };
    }
    case 'set_percentage':
      stray(['percentage']);
      return { action, percentage: inRange('percentage', Number(need('percentage', action)), entity.ranges.percentage ?? { min: 0, max: 100 }) };
    case 'set_preset_mode': {
      stray(['preset_mode']);
      const mode = String(need('preset_mode', action));
      const modes = entity.options.preset_mode ?? [];
      if (!modes.includes(mode)) throw new ArgumentError(`"preset_mode" must be one of ${modes.join(', ')} (got ${mode})`);
      return { action, preset_mode: mode };
    }
    case 'set_temperature':
      stray(['temperature']);
      return { action, temperature: inRange('temperature', Number(need('temperature', action)), entity.ranges.temperature) };
    default:
      stray([]);
      return { action } as Command;
  }
}
