// MCP tool annotations from what a generated tool stands for (its meta):
// readOnlyHint for reads; destructiveHint for actuators that can open, unlock
// or disarm something; idempotentHint where repeating the same call changes
// nothing more. Hints only: the policy, not the client, decides.
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { DeviceRegistry } from '../devices/registry.js';
import { deviceTitle } from '../tools/device-text.js';
import type { GeneratedTool } from '../tools/types.js';

/** Actions that can let someone in or let something out, or change a device for good (firmware). */
const DESTRUCTIVE = new Set(['unlock', 'open', 'disarm', 'install']);
/** Kinds whose every call is as grave as disarming: a siren sounded or silenced (#31). */
const SECURITY_KINDS = new Set(['siren']);
/** Moving a cover or valve to a position is as good as opening it. */
const DESTRUCTIVE_FOR_OPENINGS = new Set(['set_position']);
const OPENINGS = new Set(['cover', 'valve']);

/**
 * Actions that set a state outright: the same call twice leaves the same
 * state. open/close/stop are left out on purpose: many cover controllers are
 * relay pulses (a second "open" may stop or reverse the door), and `press`
 * is an event, not a state.
 */
const SET_TO_STATE = new Set([
  'turn_on',
  'turn_off',
  'lock',
  'unlock',
  'set_mode',
  'set_temperature',
  'set_value',
  'select_option',
  'set_percentage',
  'set_preset_mode',
  'arm_home',
  'arm_away',
  'arm_night',
  'disarm',
  'set_fan_speed',
  'set_humidity',
  'set_away',
  'set_text',
]);

export function isDestructive(tool: Pick<GeneratedTool, 'capability' | 'meta'>): boolean {
  if (tool.capability !== 'actuator') return false;
  const opening = tool.meta.kinds.some((k) => OPENINGS.has(k));
  if (tool.meta.kinds.some((k) => SECURITY_KINDS.has(k))) return true;
  return tool.meta.actions.some((a) => DESTRUCTIVE.has(a) || a.startsWith('disarm') || (opening && DESTRUCTIVE_FOR_OPENINGS.has(a)));
}

export function isIdempotent(tool: Pick<GeneratedTool, 'capability' | 'meta'>): boolean {
  if (tool.capability === 'read') return true;
  if (tool.meta.kinds.some((k) => OPENINGS.has(k))) return false;
  return tool.meta.actions.length > 0 && tool.meta.actions.every((a) => SET_TO_STATE.has(a));
}

export function toolAnnotations(tool: GeneratedTool, registry?: DeviceRegistry): ToolAnnotations {
  const title = toolTitle(tool, registry);
  const read = tool.capability === 'read';
  return {
    ...(title ? { title } : {}),
    readOnlyHint: read,
    destructiveHint: isDestructive(tool),
    idempotentHint: isIdempotent(tool),
    // The tools act on this home's devices only.
    openWorldHint: false,
  };
}

/** A per-entity tool is titled by its entity's name, cleaned and marked as device data. */
function toolTitle(tool: GeneratedTool, registry?: DeviceRegistry): string | undefined {
  if (!registry || tool.meta.entityIds.length !== 1) return undefined;
  const entity = registry.entity(tool.meta.entityIds[0]);
  if (!entity) return undefined;
  return deviceTitle(entity.name, tool.capability === 'read' && entity.kind === 'climate' ? 'reading' : undefined);
}
