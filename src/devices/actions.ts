// The actions an entity really offers: its kind's actions, less those its
// topics, ranges, options and payloads cannot carry. Devices know this; tools
// (argument schemas, descriptions) and discovery checks read it.
import { ACTIONS_BY_KIND } from './commands.js';
import type { Entity } from './model.js';

/** Does this cover take a position? */
export function hasPosition(entity: Entity): boolean {
  return 'position' in entity.commandTopics || ('position' in entity.attributes && entity.commandFormat === 'json');
}

/** Actions sent as a word of the payload vocabulary: offered only when the device has that word. */
const WORD_ACTIONS = new Set([
  'arm_home',
  'arm_away',
  'arm_night',
  'disarm',
  'activate',
  'start',
  'pause',
  'return_to_base',
  'locate',
  'clean_spot',
  'start_mowing',
  'dock',
  'install',
]);

/** Can a setting be sent: on a topic of its own, or inside a JSON command? */
function canSend(entity: Entity, slot: string): boolean {
  return slot in entity.commandTopics || (entity.commandFormat === 'json' && !!entity.commandTopic);
}

/** The actions this entity really offers. */
export function actionsOf(entity: Entity): string[] {
  const all = ACTIONS_BY_KIND[entity.kind] ?? [];
  return all.filter((a) => {
    if (a === 'set_position') return hasPosition(entity);
    if (a === 'set_mode') return (entity.options.mode?.length ?? 0) > 0;
    if (a === 'set_temperature') return 'temperature' in entity.ranges;
    if (a === 'stop') return entity.payloads.stop !== undefined;
    if (a === 'set_fan_speed') return (entity.options.fan_speed?.length ?? 0) > 0 && canSend(entity, 'fan_speed');
    if (a === 'set_humidity') return canSend(entity, 'humidity');
    if (a === 'set_away') return canSend(entity, 'away_mode');
    if (entity.kind === 'water_heater' && (a === 'turn_on' || a === 'turn_off')) {
      return entity.payloads[a === 'turn_on' ? 'on' : 'off'] !== undefined && ('power' in entity.commandTopics || !!entity.commandTopic);
    }
    if (a === 'set_percentage') return 'percentage' in entity.ranges || 'percentage' in entity.commandTopics || 'percentage' in entity.attributes;
    if (a === 'set_preset_mode') return (entity.options.preset_mode?.length ?? 0) > 0;
    if (WORD_ACTIONS.has(a)) return entity.payloads[a] !== undefined;
    return true;
  });
}
