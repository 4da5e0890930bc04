// The grouped actuation: one call that turns many lights, switches or fans on
// or off ("all lights off", "turn on the lights upstairs"), chosen by area,
// floor, a list of entity ids, or the whole home. The pipeline runs it
// (Pipeline.actuateGroup): each member is judged by the policy on its own and
// gets its own audit row (request id `<call's request id>#<entity id>`), so the
// grouped call is exactly the member calls, made together and cheaply. What is
// here is the pure part: the tool's schema, choosing the members, each
// member's arguments, and the result text.
import type { Entity, EntityKind } from '../devices/model.js';
import { quoted } from './device-text.js';
import { actionsOf } from './parameters.js';
import type { JsonSchema, ToolResultObject } from './types.js';

export const GROUP_TOOL = 'control_group';
/** Kinds a grouped call acts on: the ones "on" and "off" mean the same thing for. */
export const GROUP_KINDS: readonly EntityKind[] = ['light', 'switch', 'fan'];
export const GROUP_ACTIONS = ['turn_on', 'turn_off'] as const;
/** Longest `entities` list; a whole home needs no list. */
export const GROUP_MAX_LIST = 200;
/** Most members of one call: its pending rows are one transaction on the event loop, and its result one text. */
export const GROUP_MAX_MEMBERS = 200;
/** Members named in a result line before "and N more". */
const NAMED = 8;

const PLURAL: Record<string, string> = { light: 'lights', switch: 'switches', fan: 'fans' };
const SINGULAR: Record<string, string> = { lights: 'light', switches: 'switch', fans: 'fan', devices: 'device' };

function hasBrightness(e: Entity): boolean {
  return e.kind === 'light' && ('brightness' in e.ranges || 'brightness' in e.attributes);
}

/** The tool's parameters for the group kinds present in this home (undefined: none, no tool). */
export function groupParameters(members: Entity[]): JsonSchema | undefined {
  const kinds = GROUP_KINDS.filter((k) => members.some((e) => e.kind === k));
  if (!kinds.length) return undefined;
  const areas = [...new Set(members.map((e) => e.area).filter((a): a is string => !!a))];
  const floors = [...new Set(members.map((e) => e.floor).filter((a): a is string => !!a))];
  const properties: Record<string, JsonSchema> = {
    action: { enum: [...GROUP_ACTIONS], description: 'turn_on or turn_off.' },
    kind: {
      enum: [...kinds, 'all'],
      default: kinds.includes('light') ? 'light' : kinds[0],
      description: `Which kind of device (default ${kinds.includes('light') ? 'light' : kinds[0]}); "all" for ${kinds.map((k) => PLURAL[k]).join(', ')} together.`,
    },
    area: { type: 'string', minLength: 1, maxLength: 100, description: `Only devices in this area${areas.length ? ' (see get_state)' : ''}.` },
    entities: {
      type: 'array',
      items: { type: 'string', minLength: 1, maxLength: 200 },
      minItems: 1,
      maxItems: GROUP_MAX_LIST,
      uniqueItems: true,
      description: `Only these entity ids (at most ${GROUP_MAX_LIST}).`,
    },
  };
  if (floors.length) properties.floor = { type: 'string', minLength: 1, maxLength: 100, description: 'Only devices on this floor.' };
  if (members.some(hasBrightness)) {
    properties.brightness_pct = {
      type: 'integer',
      minimum: 1,
      maximum: 100,
      description: "Brightness in percent of each light's own range, only with turn_on; a light that cannot dim just turns on.",
    };
  }
  return { type: 'object', properties, required: ['action'], additionalProperties: false };
}

export const GROUP_DESCRIPTION =
  'Turn many devices on or off in one call: every light (or switch, or fan) in an area, on a floor, in a list of entity ids, ' +
  'or in the whole home when none is given. Each device is allowed or refused on its own and reports on its own; ' +
  'the result says how many were confirmed, and names any that need approval, were not allowed, or failed.';

const same = (a: string | undefined, b: string) => (a ?? '').trim().toLowerCase() === b.trim().toLowerCase();

/**
 * The members of a call, among the entities this caller may see, in a stable order.
 * A string is a failed call's reason, naming the argument that was wrong.
 */
export function selectGroup(args: Record<string, unknown>, visible: Entity[]): Entity[] | string {
  if (args.brightness_pct !== undefined && args.action !== 'turn_on') return '"brightness_pct" goes only with turn_on';
  const kind = String(args.kind ?? 'light');
  let chosen = kind === 'all' ? visible : visible.filter((e) => e.kind === kind);
  if (!chosen.length) return `"kind": there are no ${PLURAL[kind] ?? kind} here`;
  if (Array.isArray(args.entities)) {
    const ids = args.entities as string[];
    const byId = new Map(visible.map((e) => [e.id, e]));
    for (let i = 0; i < ids.length; i++) {
      const e = byId.get(ids[i]!);
      // Unknown and not visible read the same: a caller learns nothing of what it may not see.
      if (!e) return `"entities[${i}]": unknown entity ${quoted(ids[i])}; use find_entities or get_state to list them`;
      if (kind !== 'all' && e.kind !== kind) return `"entities[${i}]": ${quoted(e.name)} is a ${e.kind}, not a ${kind}; give "kind": "all" to mix kinds`;
    }
    const wanted = new Set(ids);
    chosen = chosen.filter((e) => wanted.has(e.id));
  }
  if (typeof args.area === 'string') {
    const area = args.area;
    if (!visible.some((e) => same(e.area, area))) {
      const areas = [...new Set(visible.map((e) => e.area).filter((a): a is string => !!a))].sort();
      return `"area": no area ${quoted(area)}; areas are ${areas.map((a) => quoted(a, 40)).join(', ') || 'none'}`;
    }
    chosen = chosen.filter((e) => same(e.area, area));
  }
  if (typeof args.floor === 'string') {
    const floor = args.floor;
    if (!visible.some((e) => same(e.floor, floor))) {
      const floors = [...new Set(visible.map((e) => e.floor).filter((a): a is string => !!a))].sort();
      return `"floor": no floor ${quoted(floor)}; floors are ${floors.map((a) => quoted(a, 40)).join(', ') || 'none'}`;
    }
    chosen = chosen.filter((e) => same(e.floor, floor));
  }
  if (!chosen.length) return `no ${kind === 'all' ? 'devices' : (PLURAL[kind] ?? kind)} match ${where(args) || 'these arguments'}`;
  if (chosen.length > GROUP_MAX_MEMBERS)
    return `${chosen.length} ${kind === 'all' ? 'devices' : (PLURAL[kind] ?? kind)} match, more than ${GROUP_MAX_MEMBERS} in one call; narrow it by "area", "floor" or "kind"`;
  return chosen;
}

/** One member's arguments, as its own control tool takes them; a string says why it cannot take this call. */
export function memberArgs(e: Entity, args: Record<string, unknown>): Record<string, unknown> | string {
  const action = String(args.action);
  if (!actionsOf(e).includes(action)) return `${quoted(e.name)} cannot ${action.replace(/_/g, ' ')}`;
  const out: Record<string, unknown> = { action };
  if (args.brightness_pct !== undefined) {
    // "Everything on at 40%": a switch or a fan just turns on.
    if (e.kind !== 'light') return out;
    // As a lone "on at 40%" would do in most homes: a light that cannot dim just turns on.
    if (!hasBrightness(e)) return out;
    // As its own tool takes it: toCommand puts it on the light's own scale (1% is dim, not dark).
    out.brightness_pct = Number(args.brightness_pct);
  }
  return out;
}

/** " in "Kitchen"", " on "Upstairs"": what the caller asked for, in words. */
function where(args: Record<string, unknown>): string {
  const parts: string[] = [];
  if (typeof args.area === 'string') parts.push(`in ${quoted(args.area, 40)}`);
  if (typeof args.floor === 'string') parts.push(`on ${quoted(args.floor, 40)}`);
  if (Array.isArray(args.entities)) parts.push(`among the ${args.entities.length} listed`);
  return parts.join(' ');
}

export type MemberOutcome = 'confirmed' | 'unconfirmed' | 'approval' | 'denied' | 'already' | 'failed';

export interface MemberResult {
  entity: Entity;
  outcome: MemberOutcome;
  /** Why, in words, for anything but confirmed. */
  why?: string;
  auditId?: number;
  approvalId?: string;
}

/** What one member call's result says happened. */
export function memberOutcome(entity: Entity, r: ToolResultObject): MemberResult {
  const text = r.text ?? r.error ?? '';
  const d = r.details ?? {};
  const auditId = typeof d.auditId === 'number' ? d.auditId : undefined;
  const approvalId = typeof d.approvalId === 'string' ? d.approvalId : undefined;
  const cut = (s: string) => (s.length > 240 ? `${s.slice(0, 240)}…` : s);
  if (d.duplicate) return { entity, outcome: 'already', why: cut(text), auditId };
  if (text.startsWith('confirmed:')) return { entity, outcome: 'confirmed', auditId };
  if (text.startsWith('unconfirmed:')) return { entity, outcome: 'unconfirmed', why: cut(text.slice(13).trim()), auditId };
  if (approvalId || text.startsWith('needs approval:'))
    return { entity, outcome: 'approval', why: cut(text.replace(/^needs approval:\s*/, '')), auditId, approvalId };
  if (d.decision === 'deny' || text.startsWith('not allowed:') || text.startsWith('not done:'))
    return { entity, outcome: 'denied', why: cut(text.replace(/^(not allowed|not done):\s*/, '')), auditId };
  return { entity, outcome: 'failed', why: cut(text.replace(/^failed:\s*/, '')), auditId };
}

function names(list: MemberResult[], withWhy: boolean): string {
  const shown = list.slice(0, NAMED).map((m) => `${quoted(m.entity.name)}${withWhy && m.why ? ` (${m.why.replace(/\.$/, '')})` : ''}`);
  return shown.join('; ') + (list.length > NAMED ? `; and ${list.length - NAMED} more` : '');
}

/** The call's result: what happened per member, in brief. Members are only ever ones the caller may see. */
export function groupResult(args: Record<string, unknown>, members: MemberResult[]): ToolResultObject {
  const action = String(args.action);
  const kinds = new Set(members.map((m) => m.entity.kind));
  const noun = kinds.size === 1 ? (PLURAL[[...kinds][0]!] ?? 'devices') : 'devices';
  const done = members.filter((m) => m.outcome === 'confirmed');
  const by = (o: MemberOutcome) => members.filter((m) => m.outcome === o);
  const verb = action === 'turn_on' ? 'turned on' : 'turned off';
  const place = where(args);
  const at = place ? ` ${place}` : '';
  const lines: string[] = [];
  const unconfirmed = by('unconfirmed');
  const approval = by('approval');
  const denied = by('denied');
  const already = by('already');
  const sent = done.length + unconfirmed.length;
  const all = members.length === 1 ? `the one ${SINGULAR[noun]}` : members.length === 2 ? `both ${noun}` : `all ${members.length} ${noun}`;
  const none = members.length === 1 ? `the one ${SINGULAR[noun]}${at} was not` : `none of the ${members.length} ${noun}${at} was`;
  // The first words say the outcome, as a lone call's result does (confirmed:, not allowed:, needs approval:, failed:).
  if (done.length === members.length) lines.push(`confirmed: ${verb} ${all}${at}, each confirmed by its device.`);
  else if (sent) lines.push(`partly done: ${verb} ${done.length} of ${members.length} ${noun}${at} (confirmed by the device).`);
  else if (already.length === members.length) lines.push('already handled: every member was handled before under this request id; nothing was sent again.');
  else if (approval.length) lines.push(`needs approval: ${none} ${verb} yet; nothing was sent.`);
  else if (denied.length) lines.push(`not allowed: ${none} ${verb}; nothing was sent.`);
  else lines.push(`failed: ${none} ${verb}; nothing was sent.`);
  if (unconfirmed.length)
    lines.push(`${unconfirmed.length} unconfirmed (sent, but no report of the new state in time; it may have taken effect): ${names(unconfirmed, false)}.`);
  if (approval.length) lines.push(`${approval.length} need${approval.length === 1 ? 's' : ''} approval, nothing sent: ${names(approval, true)}.`);
  if (denied.length) lines.push(`${denied.length} not allowed, nothing sent: ${names(denied, true)}.`);
  const failed = by('failed');
  if (failed.length) lines.push(`${failed.length} failed: ${names(failed, true)}.`);
  if (already.length) lines.push(`${already.length} already handled by this request id, not sent again: ${names(already, false)}.`);
  return {
    text: lines.join('\n'),
    // A call that sent nothing at all failed, as a lone member call would have.
    ...(sent === 0 && !already.length ? { isError: true } : {}),
    details: {
      group: true,
      entities: members.map((m) => m.entity.id),
      members: members.map((m) => ({
        entity: m.entity.id,
        outcome: m.outcome,
        ...(m.auditId !== undefined ? { auditId: m.auditId } : {}),
        ...(m.approvalId ? { approvalId: m.approvalId } : {}),
      })),
      auditIds: members.filter((m) => m.auditId !== undefined).map((m) => m.auditId),
    },
  };
}
