// A rule as the `hearth policy` command that makes it: shown by the CLI when a rule is
// removed, and by the HTTP API and the page next to each rule, so a person can copy it.
import type { PolicyRule, TargetType } from './rules.js';

export const TARGET_FLAG: Record<Exclude<TargetType, 'any'>, string> = {
  tool: '--tool',
  entity: '--entity',
  area: '--area',
  kind: '--kind',
  device_class: '--device-class',
  capability: '--capability',
};

const shq = (s: string): string => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/** The command that adds this rule again (shown when one is removed). */
export function ruleCommand(rule: PolicyRule): string {
  const parts = ['hearth', 'policy', rule.effect, shq(rule.subject)];
  if (rule.targetType !== 'any') parts.push(TARGET_FLAG[rule.targetType], shq(rule.target));
  if (rule.action !== '*') parts.push('--action', shq(rule.action));
  if (rule.priority !== 0) parts.push('--priority', String(rule.priority));
  if (rule.window) parts.push('--window', `${rule.window.start}-${rule.window.end}`);
  if (rule.days) parts.push('--days', rule.days.join(','));
  if (rule.maxCalls !== null) parts.push('--max-calls', String(rule.maxCalls), '--per', String(rule.perSeconds));
  if (rule.fromArea) parts.push('--from-area', shq(rule.fromArea));
  if (rule.note) parts.push('--note', shq(rule.note));
  return parts.join(' ');
}
