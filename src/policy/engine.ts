// Evaluating the policy table. Rules live in SQLite and are compiled into
// memory (globs -> RegExp) once; they are re-loaded when a rule or a
// principal changes: through this class (a per-connection counter), or by
// another connection / process (PRAGMA data_version moved and the
// trigger-maintained policy_version row changed).
//
// A decision: among the rules whose subject, target, action and time window
// all match, the highest priority wins; at equal priority deny beats confirm
// beats allow. With no match, reads are allowed and actuators denied.
import type { Capability, Principal } from '../core/principal.js';
import type { Db } from '../db/database.js';
import { compileGlob, type Matcher } from './glob.js';
import { argsHash } from './approvals.js';
import {
  APPROVE_ACTION,
  READ_AUDIT_ACTION,
  DAY_NAMES,
  EFFECT_VERB,
  describeRule,
  ruleFromRow,
  validateRule,
  PolicyRuleError,
  type NewRule,
  type PolicyRule,
  type RuleRow,
  type TargetType,
} from './rules.js';
import type { ApprovalTarget, Effect, PolicyDecision, PolicyEngine, PolicyRequest } from './types.js';

export { PolicyRuleError, type NewRule, type PolicyRule, type TargetType } from './rules.js';

export interface ToolUseMeta {
  capability: Capability;
  kinds: string[];
  entityIds: string[];
  areas: string[];
  actions: string[];
  deviceClasses: string[];
  /** The tool acts on no entity (a flow's tool): a rule on an entity, area, kind or device class never matches its calls. */
  entityless?: boolean;
}

const ENTITY_TARGETS: ReadonlySet<TargetType> = new Set(['entity', 'area', 'kind', 'device_class']);

export interface RuleConsideration {
  rule: PolicyRule;
  /** One line: the rule in words. */
  description: string;
  /** Did subject, target, action and time all match? */
  matched: boolean;
  /** Is this the rule that decided? */
  decided: boolean;
  /** Why it matched or not (the first thing that did not match). */
  why: string;
}

export interface Explanation {
  decision: PolicyDecision;
  /** The principal's roles as evaluated (its own plus the principals table's). */
  roles: string[];
  /** Every rule, in evaluation order (priority, then deny > confirm > allow, then id). */
  rules: RuleConsideration[];
}

export interface SqlitePolicyOptions {
  /** IANA time zone for time windows and days; default: the process's local time. */
  timeZone?: string;
}

export const DEFAULT_READ_REASON = 'default: reads are allowed unless a rule denies them';
export const DEFAULT_ACTUATE_REASON = 'default: actuators are denied unless a rule allows them';

interface Compiled {
  rule: PolicyRule;
  subjectIds: Matcher[];
  subjectRoles: Matcher[];
  target: Matcher;
  /** Action alternatives: `read`, `actuate`, or a glob over the action name. */
  actionRead: boolean;
  actionActuate: boolean;
  actionGlobs: Matcher[];
  /** Minutes since midnight, or -1 without a window. */
  start: number;
  end: number;
  /** Bit per weekday (bit 0 = Sunday), 127 = every day. */
  dayMask: number;
  timed: boolean;
  /** The caller's area a from_area rule asks for; null: from anywhere. */
  fromArea: Matcher | null;
  rateLimited: boolean;
  /** An `approve` rule: says who may grant approvals, never decides a call. */
  approves: boolean;
  /** A `read_audit` rule: who may read the audit log through the agent. */
  auditReads: boolean;
  decision: PolicyDecision;
}

const EFFECT_RANK: Record<Effect, number> = { deny: 0, confirm: 1, allow: 2 };
const CACHE_MAX = 10_000;

/** Per-connection write counter: every write through this module bumps it. */
const localVersions = new WeakMap<Db, number>();
function bumpLocal(db: Db): void {
  localVersions.set(db, (localVersions.get(db) ?? 0) + 1);
}

const ROLE_RE = /^[\p{L}\p{N}_.-]+$/u;
const MAX_ROLES = 32;
const MAX_ROLE_NAME = 64;

function isReadRequest(req: { action: string; capability: Capability }): boolean {
  return req.action === 'read' || req.capability === 'read';
}

function minutes(hhmm: string): number {
  return Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
}

/** Why a rule that matches did not decide: it lost to the deciding rule, or (built-in confirm) had no allow to escalate. */
function lostTo(c: Compiled, decidedBy: Compiled | null, winner: Compiled | null): string {
  const r = c.rule;
  const escalates = r.builtin && r.effect === 'confirm';
  if (!winner)
    return escalates
      ? 'matches, but a built-in confirm rule only asks a person about a call a rule allows; no rule does, so the default decides'
      : 'matches, but the default decides';
  if (c === winner) {
    const e = decidedBy!.rule;
    return `matches and would allow, but built-in rule #${e.id} (priority ${e.priority}, confirm) comes first and asks a person; it decides`;
  }
  const w = winner.rule;
  // Ahead of the winner: only a built-in confirm rule that had no allow to turn into a question.
  if (byPrecedence(c, winner) < 0 && escalates) {
    return `matches, but a built-in confirm rule only turns an allow into a request for approval; rule #${w.id} (priority ${w.priority}, ${w.effect}) decides`;
  }
  const then = decidedBy && decidedBy !== winner ? `; built-in rule #${decidedBy.rule.id} then asks a person` : '';
  if (w.priority > r.priority) return `matches, but rule #${w.id} decides: its priority ${w.priority} is higher than ${r.priority}${then}`;
  if (w.effect !== r.effect)
    return `matches, but rule #${w.id} decides: same priority ${r.priority}, and ${w.effect} wins over ${r.effect} (deny > confirm > allow)${then}`;
  return `matches, but rule #${w.id} decides: same priority ${r.priority} and effect ${r.effect}, and #${w.id} is the older rule (lower id)${then}`;
}

function compile(rule: PolicyRule): Compiled {
  const subjectIds: Matcher[] = [];
  const subjectRoles: Matcher[] = [];
  for (const alt of rule.subject.split('|')) {
    if (alt.startsWith('role:')) subjectRoles.push(compileGlob(alt.slice(5)));
    else subjectIds.push(compileGlob(alt));
  }
  const ci = rule.targetType === 'area' || rule.targetType === 'kind' || rule.targetType === 'device_class';
  let actionRead = false;
  let actionActuate = false;
  const actionGlobs: Matcher[] = [];
  for (const alt of rule.action.split('|')) {
    if (alt === 'read') actionRead = true;
    else if (alt === 'actuate') actionActuate = true;
    else actionGlobs.push(compileGlob(alt));
  }
  let dayMask = 127;
  if (rule.days) {
    dayMask = 0;
    for (const d of rule.days) dayMask |= 1 << DAY_NAMES.indexOf(d);
  }
  const desc = describeRule(rule);
  return {
    rule,
    subjectIds,
    subjectRoles,
    target: compileGlob(rule.target, ci),
    actionRead,
    actionActuate,
    actionGlobs,
    start: rule.window ? minutes(rule.window.start) : -1,
    end: rule.window ? minutes(rule.window.end) : -1,
    dayMask,
    timed: rule.window !== null || rule.days !== null,
    fromArea: rule.fromArea ? compileGlob(rule.fromArea, true) : null,
    rateLimited: rule.maxCalls !== null && rule.effect !== 'deny',
    // A permission rule (approve, read_audit) decides no device call.
    approves: rule.action === APPROVE_ACTION || rule.action === READ_AUDIT_ACTION,
    auditReads: rule.action === READ_AUDIT_ACTION,
    decision: Object.freeze({
      effect: rule.effect,
      ruleId: rule.id,
      reason: `rule #${rule.id} (${desc}${rule.note ? `; ${rule.note}` : ''}) ${EFFECT_VERB[rule.effect]}`,
    }),
  };
}

function subjectMatches(c: Compiled, id: string, roles: readonly string[]): boolean {
  for (const m of c.subjectIds) if (m(id)) return true;
  for (const m of c.subjectRoles) for (const r of roles) if (m(r)) return true;
  return false;
}

function targetValue(type: TargetType, req: PolicyRequest): string | undefined {
  switch (type) {
    case 'tool':
      return req.tool;
    case 'entity':
      return req.entityId;
    case 'area':
      return req.area;
    case 'kind':
      return req.kind;
    case 'device_class':
      return req.deviceClass;
    case 'capability':
      return req.capability;
    case 'any':
      return '*';
  }
}

function targetMatches(c: Compiled, req: PolicyRequest): boolean {
  if (c.rule.targetType === 'any') return true;
  const v = targetValue(c.rule.targetType, req);
  return v !== undefined && v !== '' && c.target(v);
}

/** A from_area rule matches only calls whose principal speaks from that area. */
function fromAreaMatches(c: Compiled, principal: Principal): boolean {
  if (!c.fromArea) return true;
  return !!principal.area && c.fromArea(principal.area);
}

function actionMatches(c: Compiled, isRead: boolean, action: string): boolean {
  if (isRead ? c.actionRead : c.actionActuate) return true;
  for (const m of c.actionGlobs) if (m(action)) return true;
  return false;
}

function inTime(c: Compiled, minute: number, weekday: number): boolean {
  if (c.start < 0) return (c.dayMask & (1 << weekday)) !== 0;
  if (c.start < c.end) return minute >= c.start && minute < c.end && (c.dayMask & (1 << weekday)) !== 0;
  // Wraps midnight: the part after midnight belongs to the day the window started.
  if (minute >= c.start) return (c.dayMask & (1 << weekday)) !== 0;
  if (minute < c.end) return (c.dayMask & (1 << ((weekday + 6) % 7))) !== 0;
  return false;
}

function byPrecedence(a: Compiled, b: Compiled): number {
  return b.rule.priority - a.rule.priority || EFFECT_RANK[a.rule.effect] - EFFECT_RANK[b.rule.effect] || a.rule.id - b.rule.id;
}

const DEFAULT_READ: PolicyDecision = Object.freeze({ effect: 'allow', ruleId: null, reason: DEFAULT_READ_REASON });
const DEFAULT_ACTUATE: PolicyDecision = Object.freeze({ effect: 'deny', ruleId: null, reason: DEFAULT_ACTUATE_REASON });

export class SqlitePolicy implements PolicyEngine {
  private rules: Compiled[] = [];
  private byId = new Map<number, Compiled>();
  private principalRoles = new Map<string, string[]>();
  /** Cache: request key (no time) -> rules matching subject, target and action, in precedence order. */
  private cache = new Map<string, Compiled[]>();
  private loadedVersion = -1;
  private seenLocal = -1;
  private seenData = -1;
  /** Inside atOnce(): another connection's changes are not looked for. */
  private steady = 0;
  private readonly timeFormat: Intl.DateTimeFormat | null;

  private readonly stmts;
  /** Count and record in one BEGIN IMMEDIATE transaction: true when the call fit the budget (and was counted). */
  private readonly hitTx: { immediate(rule: PolicyRule, principal: string, at: number, entityId: string | null, hash: string | null): boolean };

  constructor(
    private readonly db: Db,
    options: SqlitePolicyOptions = {},
  ) {
    this.timeFormat = options.timeZone
      ? new Intl.DateTimeFormat('en-US', { timeZone: options.timeZone, hourCycle: 'h23', hour: '2-digit', minute: '2-digit', weekday: 'short' })
      : null;
    this.stmts = {
      dataVersion: db.prepare('PRAGMA data_version').pluck(),
      policyVersion: db.prepare('SELECT version FROM policy_version WHERE id = 1').pluck(),
      rules: db.prepare('SELECT * FROM policy_rules ORDER BY id'),
      rule: db.prepare('SELECT * FROM policy_rules WHERE id = ?'),
      principals: db.prepare('SELECT id, roles FROM principals'),
      // No upper bound: a hit another process stamped a moment "later" than this call's clock still counts.
      countHits: db.prepare('SELECT COUNT(*) FROM rule_hits WHERE rule_id = ? AND principal = ? AND at > ?').pluck(),
      addHit: db.prepare('INSERT INTO rule_hits (rule_id, principal, at, entity_id, args_hash) VALUES (?, ?, ?, ?, ?)'),
      pruneHits: db.prepare('DELETE FROM rule_hits WHERE rule_id = ? AND principal = ? AND at <= ?'),
      insertRule: db.prepare(
        `INSERT INTO policy_rules (subject, target_type, target, action, effect, priority, window_start, window_end, days, max_calls, per_seconds, note, from_area, builtin)
         VALUES (@subject, @targetType, @target, @action, @effect, @priority, @windowStart, @windowEnd, @days, @maxCalls, @perSeconds, @note, @fromArea, 0)`,
      ),
      deleteRule: db.prepare('DELETE FROM policy_rules WHERE id = ?'),
      setPriority: db.prepare('UPDATE policy_rules SET priority = ? WHERE id = ?'),
      setRoles: db.prepare(
        `INSERT INTO principals (id, roles) VALUES (?, ?)
         ON CONFLICT (id) DO UPDATE SET roles = excluded.roles, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`,
      ),
      deletePrincipal: db.prepare('DELETE FROM principals WHERE id = ?'),
    };
    // Across processes (several `hearth call`s, the daemon) the count and the insert must be one
    // write transaction taken up front: a deferred one would let two of them count the same budget.
    this.hitTx = db.transaction((rule: PolicyRule, principal: string, at: number, entityId: string | null, hash: string | null): boolean => {
      const since = at - rule.perSeconds! * 1000;
      const used = this.stmts.countHits.get(rule.id, principal, since) as number;
      if (used >= rule.maxCalls!) return false;
      this.stmts.addHit.run(rule.id, principal, at, entityId, hash);
      this.stmts.pruneHits.run(rule.id, principal, since);
      return true;
    });
    this.refresh();
  }

  // ---- freshness -------------------------------------------------------

  /** Re-load rules and principals now (after raw SQL on this same connection). */
  reload(): void {
    const version = this.stmts.policyVersion.get() as number;
    const rows = this.stmts.rules.all() as RuleRow[];
    this.rules = rows.map((r) => compile(ruleFromRow(r))).sort(byPrecedence);
    this.byId = new Map(this.rules.map((c) => [c.rule.id, c]));
    this.principalRoles = new Map();
    for (const p of this.stmts.principals.all() as { id: string; roles: string }[]) {
      try {
        const roles = JSON.parse(p.roles) as unknown;
        this.principalRoles.set(p.id, Array.isArray(roles) ? roles.filter((r): r is string => typeof r === 'string') : []);
      } catch {
        this.principalRoles.set(p.id, []);
      }
    }
    this.cache.clear();
    this.loadedVersion = version;
  }

  /** Moves whenever a rule or a principal's roles change (through any connection): watchers compare it. */
  get version(): number {
    this.refresh();
    return this.loadedVersion;
  }

  /**
   * The rules as they are now, for every decision fn makes (a grouped call's 50 members and their read
   * checks asked SQLite's data_version 150 times, ~2.5 µs each, within one synchronous stretch). This
   * connection's own writes are still seen at once; another's from the next decision after fn.
   */
  atOnce<T>(fn: () => T): T {
    this.refresh();
    this.steady++;
    try {
      return fn();
    } finally {
      this.steady--;
    }
  }

  private refresh(): void {
    const local = localVersions.get(this.db) ?? 0;
    if (this.steady && local === this.seenLocal) return;
    const data = this.stmts.dataVersion.get() as number;
    if (local === this.seenLocal && data === this.seenData) return;
    this.seenLocal = local;
    this.seenData = data;
    if ((this.stmts.policyVersion.get() as number) !== this.loadedVersion) this.reload();
  }

  // ---- deciding --------------------------------------------------------

  private rolesFor(principal: Principal): string[] {
    const extra = this.principalRoles.get(principal.id);
    if (!extra?.length) return principal.roles;
    return [...new Set([...principal.roles, ...extra])];
  }

  private localTime(at: Date): { minute: number; weekday: number } {
    if (!this.timeFormat) return { minute: at.getHours() * 60 + at.getMinutes(), weekday: at.getDay() };
    let hour = 0;
    let minute = 0;
    let weekday = 0;
    for (const part of this.timeFormat.formatToParts(at)) {
      if (part.type === 'hour') hour = Number(part.value);
      else if (part.type === 'minute') minute = Number(part.value);
      else if (part.type === 'weekday') weekday = DAY_NAMES.indexOf(part.value.toLowerCase().slice(0, 3) as (typeof DAY_NAMES)[number]);
    }
    return { minute: hour * 60 + minute, weekday };
  }

  private candidates(req: PolicyRequest, roles: string[]): Compiled[] {
    const isRead = isReadRequest(req);
    const key = [
      req.principal.id,
      req.principal.area ?? '',
      roles.length > 1 ? [...roles].sort().join(',') : roles.join(','),
      req.tool,
      req.capability,
      req.action,
      req.entityId ?? '',
      req.area ?? '',
      req.kind ?? '',
      req.deviceClass ?? '',
    ].join('\u0000');
    let list = this.cache.get(key);
    if (!list) {
      // Approve rules name approvers; they never decide a call (not even one whose action argument says `approve`).
      list = this.rules.filter(
        (c) =>
          !c.approves &&
          subjectMatches(c, req.principal.id, roles) &&
          fromAreaMatches(c, req.principal) &&
          targetMatches(c, req) &&
          actionMatches(c, isRead, req.action),
      );
      if (this.cache.size >= CACHE_MAX) this.cache.clear();
      this.cache.set(key, list);
    }
    return list;
  }

  private evaluate(req: PolicyRequest, record: boolean): { decision: PolicyDecision; decidedBy: Compiled | null; roles: string[]; winner?: Compiled | null } {
    this.refresh();
    const roles = this.rolesFor(req.principal);
    const list = this.candidates(req, roles);
    const at = req.at ?? new Date();
    let winner: Compiled | null = null;
    // The built-in confirm rules (unlock, open a garage/door/gate, disarm) escalate an
    // allow to confirm; they never turn a deny (a rule's or the default) into a request.
    let escalation: Compiled | null = null;
    let time: { minute: number; weekday: number } | null = null;
    for (const c of list) {
      if (c.timed) {
        time ??= this.localTime(at);
        if (!inTime(c, time.minute, time.weekday)) continue;
      }
      if (c.rule.builtin && c.rule.effect === 'confirm') {
        escalation ??= c;
        continue;
      }
      winner = c;
      break;
    }
    if (!winner) return { decision: { ...(isReadRequest(req) ? DEFAULT_READ : DEFAULT_ACTUATE) }, decidedBy: null, roles };
    // An allow below the built-in confirm rule's priority still needs a person (an allow above it waives it).
    const escalated = !!escalation && winner.rule.effect === 'allow';
    const needsPerson = escalated || winner.rule.effect === 'confirm';
    if (winner.rateLimited) {
      const now = at.getTime();
      const rule = winner.rule;
      const overBudget = (): { decision: PolicyDecision; decidedBy: Compiled; roles: string[]; winner: Compiled } => ({
        decision: { effect: 'deny', ruleId: rule.id, reason: `rate limit: ${rule.maxCalls} calls per ${rule.perSeconds} s (rule #${rule.id})` },
        decidedBy: winner,
        roles,
        winner,
      });
      if (record && !needsPerson) {
        // Decided and counted in one transaction, or not at all.
        if (!this.hitTx.immediate(rule, req.principal.id, now, req.entityId ?? null, argsHash(req.args ?? {}))) return overBudget();
      } else {
        // Asking is free: a call held for a person counts (takeHit) only when it runs.
        const used = this.stmts.countHits.get(rule.id, req.principal.id, now - rule.perSeconds! * 1000) as number;
        if (used >= rule.maxCalls!) return overBudget();
      }
      if (needsPerson) {
        const base = escalated ? escalation!.decision : winner.decision;
        return { decision: { ...base, limitedBy: rule.id }, decidedBy: escalated ? escalation : winner, roles, winner };
      }
    }
    if (escalated) return { decision: { ...escalation!.decision }, decidedBy: escalation, roles, winner };
    return { decision: { ...winner.decision }, decidedBy: winner, roles, winner };
  }

  decide(request: PolicyRequest): PolicyDecision {
    return this.evaluate(request, true).decision;
  }

  /**
   * Count a call against a rate-limited rule's budget. decide() does this
   * itself for `allow`; for a `confirm` rule call it once the approved call
   * actually runs (after ApprovalStore.consume()).
   */
  recordHit(ruleId: number, principalId: string, at: Date = new Date()): void {
    this.refresh();
    const c = this.byId.get(ruleId);
    if (!c?.rateLimited) return;
    this.hitTx.immediate(c.rule, principalId, at.getTime(), null, null);
  }

  /**
   * An approved call (decision.limitedBy) is about to run: count it against
   * that rule, counting and recording in one transaction. False when the
   * budget was spent meanwhile (by another process, say): the call must not run.
   */
  takeHit(ruleId: number, request: PolicyRequest): boolean {
    this.refresh();
    const c = this.byId.get(ruleId);
    if (!c?.rateLimited) return true;
    return this.hitTx.immediate(c.rule, request.principal.id, (request.at ?? new Date()).getTime(), request.entityId ?? null, argsHash(request.args ?? {}));
  }

  // ---- approvers -------------------------------------------------------

  /** The approve rules that could apply to a call on this target, in precedence order. */
  private approveRules(target: ApprovalTarget, at: Date): Compiled[] {
    const req = {
      ...target,
      principal: { id: '', roles: [] },
      capability: target.capability ?? 'actuator',
      action: target.action ?? 'actuate',
      args: {},
    } as PolicyRequest;
    let time: { minute: number; weekday: number } | null = null;
    return this.rules.filter((c) => {
      if (!c.approves || c.auditReads || !targetMatches(c, req)) return false;
      if (!c.timed) return true;
      time ??= this.localTime(at);
      return inTime(c, time.minute, time.weekday);
    });
  }

  /**
   * May this principal grant approvals for a call on this target? Owners may;
   * otherwise the first `approve` rule (by precedence) whose subject and
   * target match decides: allow yes, deny no; none: no. `*` in a rule's action
   * never means `approve`: being allowed to act is not being allowed to approve.
   */
  mayApprove(principal: Principal, target: ApprovalTarget, at: Date = new Date()): boolean {
    this.refresh();
    const roles = this.rolesFor(principal);
    if (roles.includes('owner')) return true;
    for (const c of this.approveRules(target, at)) {
      if (subjectMatches(c, principal.id, roles)) return c.rule.effect === 'allow';
    }
    return false;
  }

  /**
   * May this principal read the audit log (the agent's `get_audit`: "who unlocked the front door today?")?
   * Owners may; otherwise the first `read_audit` rule (by precedence) whose subject matches and whose time
   * holds decides: allow yes, deny no; none: no.
   */
  mayReadAudit(principal: Principal, at: Date = new Date()): boolean {
    this.refresh();
    const roles = this.rolesFor(principal);
    if (roles.includes('owner')) return true;
    let time: { minute: number; weekday: number } | null = null;
    for (const c of this.rules) {
      if (!c.auditReads || !subjectMatches(c, principal.id, roles) || !fromAreaMatches(c, principal)) continue;
      if (c.timed) {
        time ??= this.localTime(at);
        if (!inTime(c, time.minute, time.weekday)) continue;
      }
      return c.rule.effect === 'allow';
    }
    return false;
  }

  /** Who may approve a call on this target, for answers: `role:owner` and the subjects of allowing approve rules. */
  approversFor(target: ApprovalTarget, at: Date = new Date()): string[] {
    this.refresh();
    const out = new Set<string>(['role:owner']);
    for (const c of this.approveRules(target, at)) if (c.rule.effect === 'allow') for (const s of c.rule.subject.split('|')) out.add(s);
    return [...out];
  }

  /** The decision (without using up any rate-limit budget) and every rule with why it matched or not. */
  preview(request: PolicyRequest): PolicyDecision {
    // Not explain(): previews run per event on every open stream, and explain() describes every rule.
    return this.evaluate(request, false).decision;
  }

  explain(request: PolicyRequest): Explanation {
    const { decision, decidedBy, winner, roles } = this.evaluate(request, false);
    const isRead = isReadRequest(request);
    const at = request.at ?? new Date();
    const time = this.localTime(at);
    const clock = `${String(Math.floor(time.minute / 60)).padStart(2, '0')}:${String(time.minute % 60).padStart(2, '0')} ${DAY_NAMES[time.weekday]}`;
    const rules: RuleConsideration[] = [];
    for (const c of this.rules) {
      const r = c.rule;
      let why: string | null = null;
      if (c.auditReads) {
        why = 'a read_audit rule: it names who may read the audit and decides no call';
      } else if (c.approves) {
        why = 'an approve rule: it names who may grant approvals and decides no call';
      } else if (!subjectMatches(c, request.principal.id, roles)) {
        why = `subject ${r.subject} does not match ${request.principal.id} (roles: ${roles.join(', ') || 'none'})`;
      } else if (!fromAreaMatches(c, request.principal)) {
        why = request.principal.area
          ? `the call comes from area ${request.principal.area}, not ${r.fromArea}`
          : `the call comes from no area (the rule wants ${r.fromArea})`;
      } else if (!targetMatches(c, request)) {
        const v = targetValue(r.targetType, request);
        const word = r.targetType.replace('_', ' ');
        why = v === undefined || v === '' ? `the call has no ${word}` : `${word} ${v} does not match ${r.target}`;
      } else if (!actionMatches(c, isRead, request.action)) {
        why = `action ${request.action} does not match ${r.action}`;
      } else if (c.timed && !inTime(c, time.minute, time.weekday)) {
        why = `not in force at ${clock} (${r.window ? `${r.window.start}-${r.window.end}` : 'all day'}${r.days ? ` on ${r.days.join(',')}` : ''})`;
      }
      const matched = why === null;
      const decided = matched && decidedBy === c;
      if (decided) {
        if (decision.effect === 'deny' && c.rule.effect !== 'deny') why = `matches, but ${decision.reason}`;
        else if (c !== winner && winner)
          why = `matches and decides: rule #${winner.rule.id} allows the call, and this built-in rule still asks a person (an allow above priority ${r.priority} waives it)`;
        else why = 'matches and decides';
      } else if (matched) {
        why = lostTo(c, decidedBy, winner ?? null);
      }
      rules.push({ rule: r, description: describeRule(r), matched, decided, why: why! });
    }
    return { decision, roles, rules };
  }

  /**
   * Could this principal ever use this tool? No only when, for every action
   * of the tool, a deny rule without a time window certainly matches (its
   * target covers every entity / kind / area of the tool) and no allow or
   * confirm rule that might match outranks it; or, for actuators, when no
   * allow or confirm rule could match at all (the default denies; the
   * built-in confirm rules only escalate an allow). When unsure: yes.
   */
  mayEverUse(principal: Principal, tool: string, meta: ToolUseMeta): boolean {
    this.refresh();
    const roles = this.rolesFor(principal);
    const actions = meta.capability === 'read' ? ['read'] : meta.actions;
    if (!actions.length) return true;
    const values = (type: TargetType): string[] | null => {
      switch (type) {
        case 'tool':
          return [tool];
        case 'entity':
          return meta.entityIds;
        case 'area':
          return meta.areas;
        case 'kind':
          return meta.kinds;
        case 'device_class':
          return meta.deviceClasses;
        case 'capability':
          return [meta.capability];
        case 'any':
          return null;
      }
    };
    const certain = (c: Compiled): boolean => {
      const vs = values(c.rule.targetType);
      return vs === null || (vs.length > 0 && vs.every((v) => c.target(v)));
    };
    const possible = (c: Compiled): boolean => {
      if (meta.entityless && ENTITY_TARGETS.has(c.rule.targetType)) return false;
      const vs = values(c.rule.targetType);
      return vs === null || vs.length === 0 || vs.some((v) => c.target(v));
    };
    const relevant = this.rules.filter((c) => !c.approves && subjectMatches(c, principal.id, roles) && fromAreaMatches(c, principal));
    for (const action of actions) {
      const isRead = action === 'read' || meta.capability === 'read';
      const applicable = relevant.filter((c) => actionMatches(c, isRead, action));
      // Only an allow or confirm rule of one's own can let a call through; the built-in
      // confirm rules never do (they only escalate an allow), and a deny never does.
      const ways = applicable.filter((c) => c.rule.effect !== 'deny' && !(c.rule.builtin && c.rule.effect === 'confirm') && possible(c));
      let denyAt = -Infinity;
      for (const c of applicable) {
        if (c.rule.effect === 'deny' && !c.timed && certain(c)) denyAt = Math.max(denyAt, c.rule.priority);
      }
      if (denyAt === -Infinity) {
        if (isRead || ways.length) return true;
        continue; // nothing could ever allow it: the default denies actuators
      }
      if (ways.some((c) => c.rule.priority > denyAt)) return true;
    }
    return false;
  }

  // ---- rules -----------------------------------------------------------

  list(): PolicyRule[] {
    return (this.stmts.rules.all() as RuleRow[]).map(ruleFromRow);
  }

  get(id: number): PolicyRule | undefined {
    const row = this.stmts.rule.get(id) as RuleRow | undefined;
    return row ? ruleFromRow(row) : undefined;
  }

  /** Validate and add a rule; throws PolicyRuleError naming the bad field. */
  add(input: NewRule): PolicyRule {
    const v = validateRule(input);
    const info = this.stmts.insertRule.run({
      subject: v.subject,
      targetType: v.targetType,
      target: v.target,
      action: v.action,
      effect: v.effect,
      priority: v.priority,
      windowStart: v.window?.start ?? null,
      windowEnd: v.window?.end ?? null,
      days: v.days ? v.days.join(',') : null,
      maxCalls: v.maxCalls,
      perSeconds: v.perSeconds,
      note: v.note,
      fromArea: v.fromArea,
    });
    bumpLocal(this.db);
    return this.get(Number(info.lastInsertRowid))!;
  }

  /** Remove a rule (built-in ones too: `builtin` says it was one, so a caller can warn). */
  remove(id: number): { removed: boolean; builtin: boolean; rule?: PolicyRule } {
    const rule = this.get(id);
    if (!rule) return { removed: false, builtin: false };
    this.stmts.deleteRule.run(id);
    bumpLocal(this.db);
    return { removed: true, builtin: rule.builtin, rule };
  }

  /** Move a rule up or down the order (the page's reorder); the rule keeps its id. */
  setPriority(id: number, priority: number): PolicyRule | undefined {
    const rule = this.get(id);
    if (!rule) return undefined;
    const { subject, targetType, target, action, effect, window, days, maxCalls, perSeconds, note } = rule;
    validateRule({ subject, targetType, target, action, effect, priority, window, days, maxCalls, perSeconds, note });
    this.stmts.setPriority.run(priority, id);
    bumpLocal(this.db);
    return this.get(id);
  }

  describe(rule: PolicyRule): string {
    return describeRule(rule);
  }

  // ---- principals ------------------------------------------------------

  setRoles(id: string, roles: string[]): void {
    if (typeof id !== 'string' || !/^[^\s*?|]+$/.test(id))
      throw new PolicyRuleError('principal', `must be an id like chat:alice without spaces or wildcards, got ${JSON.stringify(id)}`);
    if (!Array.isArray(roles)) throw new PolicyRuleError('roles', 'must be a list of role names');
    // Stored per principal and read on every decision and listing: a few short names.
    if (roles.length > MAX_ROLES) throw new PolicyRuleError('roles', `at most ${MAX_ROLES} roles per principal, got ${roles.length}`);
    for (const r of roles) {
      if (typeof r !== 'string' || r.length > MAX_ROLE_NAME || !ROLE_RE.test(r)) {
        const shown = typeof r === 'string' && r.length > 60 ? `${JSON.stringify(r.slice(0, 60))}... (${r.length} characters)` : JSON.stringify(r);
        throw new PolicyRuleError('roles', `${shown} is not a role name (1 to ${MAX_ROLE_NAME} letters, digits, _ . -)`);
      }
    }
    this.stmts.setRoles.run(id, JSON.stringify([...new Set(roles)]));
    bumpLocal(this.db);
  }

  /** The roles stored for a principal ([] when unknown). */
  rolesOf(id: string): string[] {
    this.refresh();
    return [...(this.principalRoles.get(id) ?? [])];
  }

  /** A Principal with its stored roles. */
  principal(id: string): Principal {
    return { id, roles: this.rolesOf(id) };
  }

  listPrincipals(): Principal[] {
    this.refresh();
    return [...this.principalRoles].map(([id, roles]) => ({ id, roles: [...roles] })).sort((a, b) => a.id.localeCompare(b.id));
  }

  removePrincipal(id: string): boolean {
    const changed = this.stmts.deletePrincipal.run(id).changes > 0;
    if (changed) bumpLocal(this.db);
    return changed;
  }
}
