// Rows of the policy table: their shape, validation of new rules (every
// field, with an error naming the field), and one-line descriptions.
import type { Effect } from './types.js';

export const TARGET_TYPES = ['tool', 'entity', 'area', 'kind', 'device_class', 'capability', 'any'] as const;
export type TargetType = (typeof TARGET_TYPES)[number];

export const EFFECTS: readonly Effect[] = ['allow', 'deny', 'confirm'];

export const DAY_NAMES = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;
export type DayName = (typeof DAY_NAMES)[number];

/** The core actions (the kinds from switch to button): the ones a bad action's error lists. */
export const CORE_ACTIONS = [
  'turn_on',
  'turn_off',
  'open',
  'close',
  'stop',
  'set_position',
  'lock',
  'unlock',
  'set_mode',
  'set_temperature',
  'set_value',
  'select_option',
  'press',
] as const;

/** Actions devices understand (src/devices/commands.ts), plus the alarm panel's. Kept in step with ACTIONS_BY_KIND (a test checks). */
export const KNOWN_ACTIONS: string[] = [
  ...CORE_ACTIONS,
  'set_percentage',
  'set_preset_mode',
  'arm_home',
  'arm_away',
  'arm_night',
  'arm_vacation',
  'disarm',
  'trigger',
  'activate',
  'start',
  'pause',
  'return_to_base',
  'locate',
  'clean_spot',
  'set_fan_speed',
  'start_mowing',
  'dock',
  'install',
  'set_humidity',
  'set_away',
  'set_text',
  'send_message',
];

/**
 * Not a device action: an `allow` rule whose action names `approve` (literally,
 * never through a glob such as `*`) lets its subject grant approvals for the
 * calls its target covers. Owners always may.
 */
export const APPROVE_ACTION = 'approve';

/**
 * Not a device action either: an `allow` rule whose action is `read_audit` (literally) lets its subject read
 * the audit log through the agent's tools ("who unlocked the front door today?"); a `deny` one refuses it.
 * Owners always may; nobody else may unless such a rule allows it.
 */
export const READ_AUDIT_ACTION = 'read_audit';

/** Actions that decide no device call: who may approve, who may read the audit. */
export const PERMISSION_ACTIONS: readonly string[] = [APPROVE_ACTION, READ_AUDIT_ACTION];

export interface TimeWindow {
  /** `HH:MM`, local time; a window whose end is before its start wraps midnight. */
  start: string;
  end: string;
}

export interface PolicyRule {
  id: number;
  subject: string;
  targetType: TargetType;
  target: string;
  action: string;
  effect: Effect;
  priority: number;
  window: TimeWindow | null;
  /** Days the rule applies on (for a window that wraps midnight: the day it starts); null = every day. */
  days: DayName[] | null;
  maxCalls: number | null;
  perSeconds: number | null;
  note: string | null;
  /** Only calls made from this area (the caller's, e.g. a satellite's; a glob, case-insensitive); null = from anywhere. */
  fromArea: string | null;
  createdAt: string;
  builtin: boolean;
}

export interface NewRule {
  subject: string;
  targetType: TargetType | string;
  /** Defaults to `*`. */
  target?: string;
  /** Defaults to `*`. */
  action?: string;
  effect: Effect | string;
  priority?: number;
  /** `{start, end}` or `'HH:MM-HH:MM'`. */
  window?: TimeWindow | string | null;
  /** `'mon,tue'`, `'mon-fri'`, or `['mon', 'tue']`. */
  days?: string | string[] | null;
  maxCalls?: number | null;
  perSeconds?: number | null;
  note?: string | null;
  /** `Hallway`: the rule matches only calls made from that area (the caller's area, not the device's). */
  fromArea?: string | null;
}

export class PolicyRuleError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
    this.name = 'PolicyRuleError';
  }
}

/** The row as stored. */
export interface RuleRow {
  id: number;
  subject: string;
  target_type: string;
  target: string;
  action: string;
  effect: string;
  priority: number;
  window_start: string | null;
  window_end: string | null;
  days: string | null;
  max_calls: number | null;
  per_seconds: number | null;
  note: string | null;
  from_area?: string | null;
  created_at: string;
  builtin: number;
}

export function ruleFromRow(row: RuleRow): PolicyRule {
  return {
    id: row.id,
    subject: row.subject,
    targetType: row.target_type as TargetType,
    target: row.target,
    action: row.action,
    effect: row.effect as Effect,
    priority: row.priority,
    window: row.window_start !== null && row.window_end !== null ? { start: row.window_start, end: row.window_end } : null,
    days: row.days
      ? (row.days
          .split(',')
          .map((d) => d.trim().toLowerCase())
          .filter(Boolean) as DayName[])
      : null,
    maxCalls: row.max_calls,
    perSeconds: row.per_seconds,
    note: row.note,
    fromArea: row.from_area ?? null,
    createdAt: row.created_at,
    builtin: row.builtin === 1,
  };
}

const show = (v: unknown): string => (typeof v === 'string' ? JSON.stringify(v) : String(v));

// A pattern: letters, digits and the characters that appear in ids, plus glob characters.
const PATTERN = /^[\p{L}\p{N}_.:@/+#*?|' -]+$/u;

function pattern(field: string, value: unknown, what: string): string {
  if (typeof value !== 'string' || value.trim() === '') throw new PolicyRuleError(field, `must be a non-empty ${what}, got ${show(value)}`);
  const v = value.trim();
  if (v.length > 200) throw new PolicyRuleError(field, 'is longer than 200 characters');
  if (!PATTERN.test(v)) throw new PolicyRuleError(field, `${show(v)} has characters a ${what} cannot have`);
  if (v.split('|').some((alt) => alt.trim() === '')) throw new PolicyRuleError(field, `${show(v)} has an empty alternative around "|"`);
  return v
    .split('|')
    .map((alt) => alt.trim())
    .join('|');
}

function validateSubject(value: unknown): string {
  const v = pattern('subject', value, 'principal pattern or role');
  for (const alt of v.split('|')) {
    if (/\s/.test(alt)) throw new PolicyRuleError('subject', `${show(alt)} contains whitespace`);
    if (alt.startsWith('role:') && alt.length === 5) throw new PolicyRuleError('subject', 'role: needs a role name (role:owner)');
  }
  return v;
}

function validateAction(value: unknown): string {
  const raw = value === undefined ? '*' : value;
  if (typeof raw !== 'string' || raw.trim() === '') throw new PolicyRuleError('action', `must be read, actuate, an action name or a glob, got ${show(raw)}`);
  const alts = raw.split('|').map((a) => a.trim().toLowerCase());
  for (const a of alts) {
    if (!/^[a-z0-9_*?]+$/.test(a)) {
      throw new PolicyRuleError('action', `${show(a)} is not read, actuate, an action name (${CORE_ACTIONS.join(', ')}) or a glob of one`);
    }
    if (!/[*?]/.test(a) && a !== 'read' && a !== 'actuate' && !PERMISSION_ACTIONS.includes(a) && !KNOWN_ACTIONS.includes(a)) {
      throw new PolicyRuleError('action', `unknown action ${show(a)}: use read, actuate, approve, read_audit, * or one of ${KNOWN_ACTIONS.join(', ')}`);
    }
  }
  return alts.join('|');
}

function validateTarget(targetType: TargetType, value: unknown): string {
  const raw = value === undefined ? '*' : value;
  if (targetType === 'any') {
    if (raw !== '*') throw new PolicyRuleError('target', `must be * for target type any, got ${show(raw)}`);
    return '*';
  }
  const v = pattern('target', raw, `${targetType.replace('_', ' ')} pattern`);
  if (targetType === 'capability') {
    for (const alt of v.split('|')) {
      if (!['read', 'actuator', '*'].includes(alt)) throw new PolicyRuleError('target', `capability must be read, actuator or *, got ${show(alt)}`);
    }
  }
  return v;
}

const HHMM = /^([01]\d|2[0-3]):([0-5]\d)$/;

function validateWindow(value: NewRule['window']): TimeWindow | null {
  if (value === undefined || value === null) return null;
  let start: unknown;
  let end: unknown;
  if (typeof value === 'string') {
    const m = /^\s*(\S+)\s*-\s*(\S+)\s*$/.exec(value);
    if (!m) throw new PolicyRuleError('window', `must be "HH:MM-HH:MM", got ${show(value)}`);
    [start, end] = [m[1], m[2]];
  } else if (typeof value === 'object') {
    ({ start, end } = value as TimeWindow);
  } else {
    throw new PolicyRuleError('window', `must be "HH:MM-HH:MM" or {start, end}, got ${show(value)}`);
  }
  const norm = (field: string, t: unknown): string => {
    const s = typeof t === 'string' && /^\d:\d\d$/.test(t.trim()) ? `0${t.trim()}` : typeof t === 'string' ? t.trim() : t;
    if (typeof s !== 'string' || !HHMM.test(s)) throw new PolicyRuleError(field, `must be a time HH:MM (00:00 to 23:59), got ${show(t)}`);
    return s;
  };
  const w = { start: norm('window.start', start), end: norm('window.end', end) };
  if (w.start === w.end) throw new PolicyRuleError('window', `start and end are both ${w.start}: leave the window out for all day`);
  return w;
}

function validateDays(value: NewRule['days']): DayName[] | null {
  if (value === undefined || value === null) return null;
  const parts = typeof value === 'string' ? value.split(',') : Array.isArray(value) ? value : null;
  if (!parts) throw new PolicyRuleError('days', `must be like "mon,tue" or "mon-fri", got ${show(value)}`);
  const out = new Set<DayName>();
  const idx = (d: unknown): number => {
    const i = typeof d === 'string' ? DAY_NAMES.indexOf(d.trim().toLowerCase().slice(0, 3) as DayName) : -1;
    if (i < 0 || typeof d !== 'string' || !/^[a-z]{3,9}$/i.test(d.trim())) {
      throw new PolicyRuleError('days', `${show(d)} is not a day: use ${DAY_NAMES.join(', ')}`);
    }
    return i;
  };
  for (const part of parts) {
    if (typeof part !== 'string') throw new PolicyRuleError('days', `${show(part)} is not a day`);
    const range = part.split('-');
    if (range.length === 2) {
      const [a, b] = [idx(range[0]), idx(range[1])];
      for (let i = a; ; i = (i + 1) % 7) {
        out.add(DAY_NAMES[i]);
        if (i === b) break;
      }
    } else if (range.length === 1) {
      out.add(DAY_NAMES[idx(part)]);
    } else {
      throw new PolicyRuleError('days', `${show(part)} is not a day or a range of days`);
    }
  }
  if (!out.size) throw new PolicyRuleError('days', 'names no day');
  // Week order starting Monday.
  return [1, 2, 3, 4, 5, 6, 0].map((i) => DAY_NAMES[i]).filter((d) => out.has(d));
}

function positiveInt(field: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0 || v > 1e9) throw new PolicyRuleError(field, `must be a positive whole number, got ${show(v)}`);
  return v;
}

export type ValidRule = Omit<PolicyRule, 'id' | 'createdAt' | 'builtin'>;

/** Check and normalise a new rule; throws PolicyRuleError naming the first bad field. */
export function validateRule(input: NewRule): ValidRule {
  if (typeof input !== 'object' || input === null) throw new PolicyRuleError('rule', 'must be an object');
  const known = new Set(['subject', 'targetType', 'target', 'action', 'effect', 'priority', 'window', 'days', 'maxCalls', 'perSeconds', 'note', 'fromArea']);
  for (const k of Object.keys(input)) if (!known.has(k)) throw new PolicyRuleError(k, `is not a rule field (fields: ${[...known].join(', ')})`);
  const subject = validateSubject(input.subject);
  const targetType = input.targetType === 'device-class' ? 'device_class' : input.targetType;
  if (!TARGET_TYPES.includes(targetType as TargetType)) {
    throw new PolicyRuleError('targetType', `must be one of ${TARGET_TYPES.join(', ')}, got ${show(input.targetType)}`);
  }
  const target = validateTarget(targetType as TargetType, input.target);
  const action = validateAction(input.action);
  if (!EFFECTS.includes(input.effect as Effect)) throw new PolicyRuleError('effect', `must be allow, deny or confirm, got ${show(input.effect)}`);
  const priority = input.priority ?? 0;
  if (typeof priority !== 'number' || !Number.isInteger(priority) || Math.abs(priority) > 1_000_000) {
    throw new PolicyRuleError('priority', `must be a whole number between -1000000 and 1000000, got ${show(priority)}`);
  }
  const window = validateWindow(input.window);
  const days = validateDays(input.days);
  const hasMax = input.maxCalls !== undefined && input.maxCalls !== null;
  const hasPer = input.perSeconds !== undefined && input.perSeconds !== null;
  if (hasMax !== hasPer) throw new PolicyRuleError(hasMax ? 'perSeconds' : 'maxCalls', 'a rate limit needs both maxCalls and perSeconds');
  const maxCalls = hasMax ? positiveInt('maxCalls', input.maxCalls) : null;
  const perSeconds = hasPer ? positiveInt('perSeconds', input.perSeconds) : null;
  if (maxCalls !== null && input.effect === 'deny') throw new PolicyRuleError('maxCalls', 'a rate limit only makes sense on an allow or confirm rule');
  if (action.split('|').includes(READ_AUDIT_ACTION)) {
    if (action !== READ_AUDIT_ACTION) throw new PolicyRuleError('action', 'read_audit cannot be combined with other actions: give it a rule of its own');
    if (input.effect === 'confirm') throw new PolicyRuleError('effect', 'a read_audit rule allows or denies reading the audit; it cannot need confirmation');
    if (maxCalls !== null) throw new PolicyRuleError('maxCalls', 'a read_audit rule cannot be rate-limited');
  }
  if (action.split('|').includes(APPROVE_ACTION)) {
    if (action !== APPROVE_ACTION) throw new PolicyRuleError('action', 'approve cannot be combined with other actions: give the approvers their own rule');
    if (input.effect === 'confirm')
      throw new PolicyRuleError('effect', 'an approve rule allows or denies granting approvals; it cannot itself need confirmation');
    if (maxCalls !== null) throw new PolicyRuleError('maxCalls', 'an approve rule cannot be rate-limited');
  }
  let note: string | null = null;
  if (input.note !== undefined && input.note !== null) {
    if (typeof input.note !== 'string') throw new PolicyRuleError('note', `must be text, got ${show(input.note)}`);
    if (input.note.length > 500) throw new PolicyRuleError('note', 'is longer than 500 characters');
    // One line of plain text: listings print it to terminals and pages, where escapes and newlines would fake output.
    if (/\p{Cc}/u.test(input.note)) throw new PolicyRuleError('note', 'must be one line of plain text (no control characters or line breaks)');
    note = input.note.trim() || null;
  }
  const fromArea = input.fromArea === undefined || input.fromArea === null ? null : pattern('fromArea', input.fromArea, 'area name or glob');
  return {
    subject,
    targetType: targetType as TargetType,
    target,
    action,
    effect: input.effect as Effect,
    priority,
    window,
    days,
    maxCalls,
    perSeconds,
    note,
    fromArea,
  };
}

const TARGET_WORD: Record<TargetType, string> = {
  tool: 'tool',
  entity: 'entity',
  area: 'area',
  kind: 'kind',
  device_class: 'device class',
  capability: 'capability',
  any: '',
};

function actionPhrase(action: string): string {
  return action
    .split('|')
    .map((a) => (a === '*' ? 'do anything to' : a))
    .join(' or ');
}

/** `role:owner may actuate kind light between 22:00 and 06:00 on mon,tue, at most 3 calls per 60 s`. */
export function describeRule(rule: Omit<PolicyRule, 'id' | 'createdAt' | 'builtin' | 'fromArea'> & { fromArea?: string | null }): string {
  const verb = rule.effect === 'allow' ? 'may' : rule.effect === 'deny' ? 'may not' : 'must confirm to';
  const target = rule.targetType === 'any' ? 'anything' : `${TARGET_WORD[rule.targetType]} ${rule.target}`;
  let s = `${rule.subject} ${verb} ${actionPhrase(rule.action)} ${target}`;
  if (rule.fromArea) s += ` from area ${rule.fromArea}`;
  if (rule.window) s += ` between ${rule.window.start} and ${rule.window.end}`;
  if (rule.days) s += ` on ${rule.days.join(',')}`;
  if (rule.maxCalls !== null) s += `, at most ${rule.maxCalls} calls per ${rule.perSeconds} s`;
  return s;
}

export const EFFECT_VERB: Record<Effect, string> = { allow: 'allows', deny: 'denies', confirm: 'requires confirmation' };
