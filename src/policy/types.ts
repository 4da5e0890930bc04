// What the handler pipeline asks the policy, and what it answers.
import type { Capability, Principal } from '../core/principal.js';

export type Effect = 'allow' | 'deny' | 'confirm';

export interface PolicyRequest {
  principal: Principal;
  /** The bare tool name (`living_room_lamp`, `lights`). */
  tool: string;
  capability: Capability;
  /** `read`, or the specific command (`turn_on`, `unlock`, `open`, `set_temperature`...). */
  action: string;
  entityId?: string;
  area?: string;
  /** Entity kind (`lock`, `cover`...) and device class (`garage`, `door`...). */
  kind?: string;
  deviceClass?: string;
  args: Record<string, unknown>;
  /** Defaults to now. */
  at?: Date;
}

export interface PolicyDecision {
  effect: Effect;
  /** The rule that decided, or null for the built-in default. */
  ruleId: number | null;
  /** One sentence a person (and a model) can read: which rule and why. */
  reason: string;
  /**
   * A `confirm` whose call, once approved, counts against this rate-limited
   * rule (the rule that allowed it, when a built-in confirm rule escalated the
   * allow; or the confirm rule itself). Take it with takeHit() when the call runs.
   */
  limitedBy?: number;
}

/** What a call acts on, for who-may-approve questions. */
export interface ApprovalTarget {
  tool: string;
  entityId?: string;
  area?: string;
  kind?: string;
  deviceClass?: string;
  capability?: Capability;
  action?: string;
}

export interface PolicyEngine {
  /**
   * Decide one call. An `allow` that passes a rate-limited rule counts
   * against that rule's budget; a call over budget is denied with a reason.
   */
  decide(request: PolicyRequest): PolicyDecision;
  /**
   * Could this principal ever use this tool (any action, any time)? Tools
   * for which the answer is no are left out of the principal's tool set.
   */
  /** The decision for a request without recording anything (no rate-limit hit). */
  preview?(request: PolicyRequest): PolicyDecision;
  /**
   * Run `fn` (synchronous) with the rules as they are at its start: many decisions that belong to one
   * call (a grouped call's members) look for another process's changes once, not once each.
   */
  atOnce?<T>(fn: () => T): T;
  /**
   * Count an approved call against a rate-limited rule (decision.limitedBy),
   * counting and recording in one transaction: false when the budget is spent.
   */
  takeHit?(ruleId: number, request: PolicyRequest): boolean;
  /**
   * The one approver check: may this principal grant approvals for a call on
   * this target? Owners may; so may a subject an `allow ... approve` rule
   * names for that target. Every door that takes a person's yes asks this.
   */
  mayApprove?(principal: Principal, target: ApprovalTarget): boolean;
  /** May this principal read the audit log through the agent's tools? Owners, and the subjects of read_audit allow rules. */
  mayReadAudit?(principal: Principal): boolean;
  /** Who may approve a call on this target, in words (`role:owner`, `role:adult`, ...). */
  approversFor?(target: ApprovalTarget): string[];
  mayEverUse(
    principal: Principal,
    tool: string,
    meta: { capability: Capability; kinds: string[]; entityIds: string[]; areas: string[]; actions: string[]; deviceClasses: string[]; entityless?: boolean },
  ): boolean;
}

/** One message a held call would publish: where it goes and exactly what it says. */
export interface SentMessage {
  topic: string;
  payload: string;
}

/** The call an approval binds: who, what, with which arguments, and what it would publish. */
export interface ApprovalBinding {
  principal: string;
  tool: string;
  entityId?: string | null;
  args: Record<string, unknown>;
  /** What the call would publish (topics and exact payloads); absent: not known ahead (a call on no entity). */
  sends?: readonly SentMessage[] | null;
}

/** The approval store for `confirm` rules: bound to one exact call, single use, expiring. */
export interface ApprovalStore {
  /**
   * Record that a call is waiting for approval; returns its id (stable for the same call while pending).
   * Bound to the entity, the exact arguments and what it would publish (the tool name only when entityId is null).
   */
  request(call: ApprovalBinding & { reason: string }): {
    id: string;
    expiresAt: number;
  };
  /** Grant a pending approval (by a person via CLI, HTTP or Node-RED). */
  grant(id: string, by: string): boolean;
  deny(id: string, by: string): boolean;
  /** Use up a granted approval for exactly this call (sending exactly what was asked); returns its id or null. */
  consume(call: ApprovalBinding): string | null;
}
