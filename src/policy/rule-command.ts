// A rule as the `hearth policy` command that makes it: shown by the CLI when a rule is
// removed, and by the HTTP API and the page next to each rule, so a person can copy it.
import type { PolicyRule, TargetType } from './rules.js';
import { shellWord } from '../util/shell-word.js';

export const TARGET_FLAG: Record<Exclude<TargetType, 'any'>, string> = {
  tool: '--tool',
  entity: '--entity',
  area: '--area',
  kind: '--kind',
  device_class: '--device-class',
  capability: '--capability',
};

/** The command that adds this rule again (shown when one is removed). */
export function ruleCommand(rule: PolicyRule): string {
  const parts = ['hearth', 'policy', rule.effect, shellWord(rule.subject)];
  if (rule.targetType !== 'any') parts.push(TARGET_FLAG[rule.targetType], shellWord(rule.target));
  if (rule.action !== '*') parts.push('--action', shellWord(rule.action));
  if (rule.priority !== 0) parts.push('--priority', String(rule.priority));
  if (rule.window) parts.push('--window', `${rule.window.start}-${rule.window.end}`);
  if (rule.days) parts.push('--days', rule.days.join(','));
  if (rule.maxCalls !== null) parts.push('--max-calls', String(rule.maxCalls), '--per', String(rule.perSeconds));
  if (rule.fromArea) parts.push('--from-area', shellWord(rule.fromArea));
  if (rule.note) parts.push('--note', shellWord(rule.note));
  return parts.join(' ');
}
