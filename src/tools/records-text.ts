// The agent's view of the audit (get_audit) and of the policy (explain_policy): "who unlocked the front door
// today?", "why can't I unlock the front door?". Both only read; the pipeline checks who may ask.
import type { StoredAuditRow } from '../audit/row.js';
import type { AuditListFilter } from '../audit/store.js';
import type { Entity } from '../devices/model.js';
import { HistoryRangeError, parseRange } from '../history/query.js';
import type { PolicyDecision } from '../policy/types.js';
import { outcomeWord } from '../present/audit-row.js';
import { principalWords } from '../present/principal.js';
import { formatAge } from '../util/time.js';
import { quoted } from './device-text.js';
import type { ToolResultObject } from './types.js';

/** What a row's outcome says to a person (issue 42): never more than the audit knows. */
const OUTCOME_TEXT: Record<string, string> = {
  held: 'held for approval',
  denied: 'denied',
  confirmed: 'done and confirmed',
  unconfirmed: 'sent but not confirmed',
  not_sent: 'not sent',
  failed: 'failed',
  pending: 'sent, no outcome yet',
  interrupted: 'interrupted (Hearth stopped before the outcome was known)',
};

export const AUDIT_TOOL = 'get_audit';
export const POLICY_TOOL = 'explain_policy';

export const AUDIT_REFUSAL = 'not allowed: only someone allowed to read the audit can ask that; ask an owner';

/** At most this many rows are shown; the rest are counted. */
const SHOWN = 20;

function when(ts: number, now: number): string {
  return `${new Date(ts).toISOString().slice(0, 16).replace('T', ' ')} UTC (${formatAge(now - ts)})`;
}

export interface AuditQuery {
  entity?: Entity;
  action?: string;
  principal?: string;
  since: number;
  until: number;
  /** How many calls were read, when the range held more than that (the rest were not looked at). */
  capped?: number;
}

/** The window asked for (default: the last 24 hours), or a failed result naming the bad argument. */
export function auditWindow(args: Record<string, unknown>, now: number): { since: number; until: number } | ToolResultObject {
  try {
    const r = parseRange(
      { since: typeof args.since === 'string' ? args.since : undefined, until: typeof args.until === 'string' ? args.until : undefined },
      now,
    );
    return { since: r.since, until: r.until };
  } catch (err) {
    if (err instanceof HistoryRangeError) return { text: `invalid arguments: ${err.message}`, isError: true };
    throw err;
  }
}

/** Does a row's principal match what was asked: its id, or the name a person gave it (`anna` for `chat:anna`)? */
export function principalMatches(id: string, asked: string): boolean {
  const a = asked.trim().toLowerCase();
  const l = id.toLowerCase();
  return l === a || l.slice(l.indexOf(':') + 1) === a;
}

/** One line per call, newest first: when, who (as a person), what on which device, and its outcome in words. */
export function auditAnswer(rows: StoredAuditRow[], q: AuditQuery, nameOf: (id: string) => string | undefined, now: number): ToolResultObject {
  const about = [q.entity ? `${quoted(q.entity.name)} (${q.entity.id})` : '', q.action ? `action ${q.action}` : '', q.principal ? `by ${q.principal}` : '']
    .filter(Boolean)
    .join(', ');
  const head = `Audit${about ? ` of ${about}` : ''} from ${when(q.since, now)} to ${when(q.until, now)}`;
  if (!rows.length) return { text: `${head}: no calls recorded.`, details: { audit: [] } };
  const lines = rows.slice(0, SHOWN).map((r) => {
    const name = r.entityId ? (nameOf(r.entityId) ?? r.entityId) : r.tool;
    const target = r.entityId ? `${quoted(name)} (${r.entityId})` : quoted(name);
    return `- ${when(Date.parse(r.at), now)}: ${principalWords(r.principal)}: ${r.action} ${target}: ${OUTCOME_TEXT[outcomeWord(r)] ?? outcomeWord(r)}`;
  });
  const more =
    (rows.length > SHOWN ? `\n(${rows.length - SHOWN} more not shown)` : '') +
    (q.capped ? `\n(only the newest ${q.capped} calls of the range were read; narrow the range or name an entity for the rest)` : '');
  return {
    text: `${head}: ${rows.length} call${rows.length === 1 ? '' : 's'}, newest first:\n${lines.join('\n')}${more}`,
    details: {
      audit: rows.slice(0, SHOWN).map((r) => ({ id: r.id, at: r.at, principal: r.principal, entity: r.entityId, action: r.action, outcome: outcomeWord(r) })),
    },
  };
}

const EFFECT_TEXT: Record<string, string> = { allow: 'allowed', deny: 'not allowed', confirm: 'held for approval' };

/** One line per principal: what the policy would decide for this action on this entity now, and why. */
export function policyAnswer(entity: Entity, action: string, decisions: Array<{ principal: string; decision: PolicyDecision }>): ToolResultObject {
  const lines = decisions.map(({ principal, decision }) => `- ${principalWords(principal)}: ${EFFECT_TEXT[decision.effect]}: ${decision.reason}`);
  return {
    text: `Policy for ${action.replace(/_/g, ' ')} on ${quoted(entity.name)} (${entity.id}), now:\n${lines.join('\n')}`,
    details: { policy: decisions.map((d) => ({ principal: d.principal, effect: d.decision.effect, rule: d.decision.ruleId, reason: d.decision.reason })) },
  };
}

/**
 * get_audit's answer from the audit's rows: the call index narrows by entity, principal (an id) and time; an
 * action or a principal's name is read off its rows; rows on entities the caller may not read are left out.
 */
export function readAudit(
  list: (filter: AuditListFilter) => StoredAuditRow[],
  entity: Entity | undefined,
  args: Record<string, unknown>,
  nameOf: (id: string) => string | undefined,
  readable: (entityId: string) => boolean,
  now: number,
): ToolResultObject {
  const window = auditWindow(args, now);
  if (!('since' in window)) return window;
  const action = typeof args.action === 'string' ? args.action : undefined;
  const principal = typeof args.principal === 'string' ? args.principal : undefined;
  const byId = principal?.includes(':') ? principal : undefined;
  const limit = action || (principal && !byId) ? 2000 : 200;
  const read = list({
    entityId: entity?.id,
    principal: byId,
    since: new Date(window.since),
    until: new Date(window.until),
    order: 'desc',
    limit,
  });
  const rows = read.filter(
    (r) => (!action || r.action === action) && (!principal || principalMatches(r.principal, principal)) && (!r.entityId || readable(r.entityId)),
  );
  return auditAnswer(rows, { entity, action, principal, ...window, ...(read.length === limit ? { capped: limit } : {}) }, nameOf, now);
}
