// The policy module: rules table evaluation, rule management, approvals.
export * from './types.js';
export {
  SqlitePolicy,
  DEFAULT_ACTUATE_REASON,
  DEFAULT_READ_REASON,
  type Explanation,
  type RuleConsideration,
  type SqlitePolicyOptions,
  type ToolUseMeta,
} from './engine.js';
export {
  PolicyRuleError,
  TARGET_TYPES,
  KNOWN_ACTIONS,
  describeRule,
  validateRule,
  type NewRule,
  type PolicyRule,
  type TargetType,
  type TimeWindow,
  type DayName,
} from './rules.js';
export {
  SqliteApprovals,
  canonicalJson,
  argsHash,
  DEFAULT_APPROVAL_TTL_MS,
  type Approval,
  type ApprovalStatus,
  type ApprovalsOptions,
  type ApprovalEvents,
} from './approvals.js';
export { compileGlob } from './glob.js';
