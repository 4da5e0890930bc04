// Questions the audit and the policy answer (issue 42): "who unlocked the front door today?", "what did you do
// in the last hour?", "why can't I unlock the front door?", "who may open the garage?". Round 1 turns them into
// one get_audit or explain_policy call (read tools the pipeline checks like every read); round 2 reads the
// result back. The words are sentence data (`audit_action`, `period` and the responses); a question never acts.
import type { Entity } from '../../../devices/model.js';
import { AUDIT_TOOL, POLICY_TOOL } from '../../../tools/records-text.js';
import { localIso, windowOf } from './history.js';
import type { Captures, MatchContext } from './matcher.js';
import { isReply, resolveTarget, sortEntities, type Reply } from './resolve.js';
import type { Responses } from './responses.js';
import type { OfferedTools, PlannedCall } from './tools.js';
import type { Vocabulary } from './vocabulary.js';

export { AUDIT_TOOL, POLICY_TOOL };

export interface RecordsPlan {
  calls: PlannedCall[];
  entities: Entity[];
  /** `away`: asked "while I was away", answered over today (Hearth cannot tell when someone was away). */
  asked?: string;
}

/** The action a question's verb names, as the audit and the policy know it: a lock "opens" by unlocking. */
function actionFor(e: Entity | undefined, said: unknown): string | undefined {
  if (typeof said !== 'string' || !said) return undefined;
  if (e?.kind === 'lock' && said === 'open') return 'unlock';
  if (e?.kind === 'lock' && said === 'close') return 'lock';
  return said;
}

/** The one entity a question is about: of a device's entities, the one that takes the action. */
function oneEntity(c: Captures, v: Vocabulary, offered: OfferedTools, context: MatchContext): Entity | Reply | undefined {
  if (!c.names.length && !c.kind) return undefined;
  const t = resolveTarget(c, v, 'read', context);
  if (isReply(t)) return t;
  let candidates = sortEntities(t.entities.filter((e) => e.kind !== 'camera' && e.kind !== 'button'));
  const acting = candidates.filter((e) => !!offered.actuator(e, actionFor(e, c.other.audit_action)));
  if (acting.length) candidates = acting;
  const locks = candidates.filter((e) => e.kind === 'lock');
  if (locks.length && (c.other.audit_action === 'unlock' || c.other.audit_action === 'lock' || c.other.audit_action === 'open')) candidates = locks;
  if (!candidates.length) return undefined;
  if (candidates.length > 1) return { type: 'ambiguous', candidates, rank: 3 };
  return candidates[0];
}

export function planAudit(c: Captures, v: Vocabulary, offered: OfferedTools, context: MatchContext, now: number): RecordsPlan | Reply | null {
  // Not offered: the caller may not read the audit. Said plainly, never guessed at from elsewhere.
  const tool = offered.get(AUDIT_TOOL);
  if (!tool) return { type: 'refused', key: 'audit_refused', rank: 3 };
  const e = oneEntity(c, v, offered, context);
  if (e && 'type' in e) return e;
  const action = actionFor(e, c.other.audit_action);
  const away = c.other.away === true;
  // No period said (or "while I was away"): today.
  const period = c.other.period && !away ? c.other.period : { from: 0, to: 24 };
  const window = windowOf(period, undefined, now);
  const since = window.since ?? localIso(new Date(now - 86_400_000));
  return {
    calls: [
      { tool: tool.name, args: { ...(e ? { entity: e.id } : {}), ...(action ? { action } : {}), since, ...(window.until ? { until: window.until } : {}) } },
    ],
    entities: e ? [e] : [],
    ...(away ? { asked: 'away' } : {}),
  };
}

export function planPolicy(c: Captures, v: Vocabulary, offered: OfferedTools, context: MatchContext): RecordsPlan | Reply | null {
  const tool = offered.get(POLICY_TOOL);
  if (!tool) return null;
  const e = oneEntity(c, v, offered, context);
  if (!e) return null;
  if ('type' in e) return e;
  const action = actionFor(e, c.other.audit_action) ?? 'read';
  const who = c.other.everyone === true ? '*' : typeof c.other.person === 'string' ? c.other.person : undefined;
  return { calls: [{ tool: tool.name, args: { entity: e.id, action, ...(who ? { for: who } : {}) } }], entities: [e] };
}

// ------------------------------------------------------------------ round 2

const WHEN = '(\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC) \\(([^()]*)\\)';
const AUDIT_LINE = new RegExp(`^- ${WHEN}: (.+?): (\\S+) (?:"((?:[^"\\\\]|\\\\.)*)" \\([^()]*\\)|(\\S+)): (.+)$`);
const POLICY_LINE = /^- (.+?): (allowed|not allowed|held for approval): (.+)$/;

const capitalised = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

function verbOf(r: Responses, action: string): string {
  return r.has(`verb_${action}`) ? r.say(`verb_${action}`) : action.replace(/_/g, ' ');
}

/** The audit's answer as sentences: who asked for what, when, and what came of it; or undefined when the text is not one. */
export function auditSentence(result: string, r: Responses, asked: string | undefined, nameOf: (name: string) => string): string | undefined {
  if (/^not allowed: only someone allowed to read the audit/.test(result)) return r.say('audit_refused');
  const [head, ...lines] = result.split('\n');
  if (!/^Audit\b/.test(head)) return undefined;
  let said: string;
  if (/: no calls recorded\.$/.test(head)) said = r.say('audit_none');
  else {
    const calls = lines
      .map((l) => AUDIT_LINE.exec(l.trim()))
      .filter((m): m is RegExpExecArray => !!m)
      .slice(0, 5)
      .map(([, time, age, who, action, quotedName, tool, outcome]) =>
        capitalised(r.say('audit_line', { who, action: verbOf(r, action), name: quotedName !== undefined ? nameOf(quotedName) : tool, time, age, outcome })),
      );
    const total = Number(/: (\d+) calls?, newest first/.exec(head)?.[1] ?? calls.length);
    said = `${calls.join(' ')}${total > calls.length ? ` ${r.say('audit_more', { count: total - calls.length })}` : ''}`;
  }
  return asked === 'away' ? r.say('audit_away', { answer: said }) : said;
}

/** The policy's answer: for each principal asked about, allowed / not allowed / held for approval, and why. */
export function policySentence(result: string, r: Responses, name: string, action: string): string | undefined {
  if (/^not allowed: only an owner can ask/.test(result)) return r.say('policy_others_refused');
  const [head, ...lines] = result.split('\n');
  if (!/^Policy for /.test(head)) return undefined;
  const said = lines
    .map((l) => POLICY_LINE.exec(l.trim()))
    .filter((m): m is RegExpExecArray => !!m)
    .slice(0, 8)
    .map(([, who, effect, reason]) => capitalised(r.say('policy_line', { who, effect, reason: reason.replace(/\.$/, '') })));
  return r.say('policy_answer', { action: verbOf(r, action), name, lines: said.join(' ') });
}
