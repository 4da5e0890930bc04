// Tools that do not come from the device registry: a Node-RED flow's
// hearth-tool node (or any host code) supplies the handler, and Hearth wraps
// it in the same checks as a device tool, so a flow tool cannot skip a policy
// rule or an audit row:
//   validate -> policy (read | actuator) -> approval (confirm rules)
//   -> audit(pending) -> run the handler (timeout, the call's signal) -> audit(outcome)
// Reads, as with device tools, leave a row only when they are refused.
//
// ToolSet.external holds them; ToolSet merges them into the set it announces.
import { EventEmitter } from 'node:events';
import type { ValidateFunction } from 'ajv';
import type { AuditEntry, AuditLog, AuditRow } from '../audit/types.js';
import type { Logger } from '../log.js';
import { canonicalJson, settleConfirm } from '../policy/approvals.js';
import type { ApprovalStore, PolicyDecision, PolicyEngine, PolicyRequest } from '../policy/types.js';
import { createAjv, schemaProblems } from '../util/ajv.js';
import { argumentBoundsProblem, argumentSummary } from './argument-bounds.js';
import { GROUPED_TOOL_NAMES } from './generator.js';
import { linearRegExp } from './linear-patterns.js';
import { schemaCostProblem } from './schema-cost.js';
import { GROUP_TOOL } from './group-call.js';
import { isValidToolName, MAX_TOOL_NAME, RESERVED_NAMES } from './names.js';
import type { Capability, GeneratedTool, JsonSchema, ToolCall, ToolHandler, ToolResult, ToolResultObject } from './types.js';
import { errorOf } from '../util/error.js';
import { cleanUntrustedLines } from '../util/untrusted-text.js';

export const DEFAULT_EXTERNAL_TIMEOUT_MS = 30_000;
const MAX_DESCRIPTION = 2000;

export interface ExternalToolDef {
  /** The bare tool name (advertised as `host__<name>`). */
  name: string;
  description: string;
  /** JSON Schema of the arguments: an object schema. */
  parameters: JsonSchema;
  capability: Capability;
  /** Runs the tool once the checks passed; gets validated arguments and a signal that aborts on cancel or timeout. */
  handler: ToolHandler;
  /** Who provides the tool (`flow:<node id>`), for logs and audit reasons. */
  source: string;
  /** Longest wait for the handler's answer; default 30 s. */
  timeoutMs?: number;
}

export interface ExternalToolDeps {
  policy: PolicyEngine;
  audit: AuditLog;
  approvals?: ApprovalStore;
  log: Logger;
}

export class ExternalToolError extends Error {
  constructor(
    message: string,
    readonly code: 'bad_name' | 'bad_schema' | 'bad_tool' | 'name_taken',
  ) {
    super(message);
    this.name = 'ExternalToolError';
  }
}

/** The abort reason when the handler did not answer in time. */
export class ExternalToolTimeout extends Error {
  constructor(readonly timeoutMs: number) {
    super(`no answer within ${timeoutMs} ms`);
    this.name = 'ExternalToolTimeout';
  }
}

// Hearth's own tool names in any letter case: a flow tool called control_group (absent while a home has
// no lights) or Get_State would be taken for Hearth's, by a model and by whoever reads the rules.
const OWN_NAMES = new Set([...RESERVED_NAMES, GROUP_TOOL, ...GROUPED_TOOL_NAMES].map((n) => n.toLowerCase()));

const FAIL = (text: string, details: Record<string, unknown> = {}): ToolResultObject => ({ text, isError: true, details });

// Details only Hearth writes: doors act on them (an approvalId makes the MCP door ask the person to grant
// that approval, the page show the call as waiting), so a handler's answer may not carry them.
const HEARTH_DETAILS = [
  'approvalId',
  'auditId',
  'auditIds',
  'decision',
  'ruleId',
  'duplicate',
  'mismatch',
  'group',
  'members',
  'entities',
  'source',
  'latencyMs',
];

function normalize(raw: ToolResult): ToolResultObject {
  let result: ToolResultObject;
  if (typeof raw === 'string') return { text: cleanUntrustedLines(raw) };
  if (!raw || typeof raw !== 'object') return { text: cleanUntrustedLines(String(raw)) };
  if (raw.error && !raw.isError) result = { ...raw, text: raw.text ?? raw.error, isError: true };
  else result = raw;
  // A flow relays what it fetched: escapes, bidi overrides and tag characters never reach a model or a terminal.
  if (typeof result.text === 'string') result = { ...result, text: cleanUntrustedLines(result.text) };
  if (!result.details || !HEARTH_DETAILS.some((k) => Object.hasOwn(result.details!, k))) return result;
  const details = Object.fromEntries(Object.entries(result.details).filter(([k]) => !HEARTH_DETAILS.includes(k)));
  return { ...result, details };
}

/** Check a tool definition; throws ExternalToolError naming the problem. */
export function checkExternalToolDef(def: Omit<ExternalToolDef, 'handler' | 'source'>): ValidateFunction {
  if (typeof def.name !== 'string' || !isValidToolName(def.name)) {
    const why = RESERVED_NAMES.has(def.name) ? 'is a reserved name' : `must be 1 to ${MAX_TOOL_NAME} letters, digits, _ or -, without "__"`;
    throw new ExternalToolError(`tool name ${JSON.stringify(def.name)} ${why}`, 'bad_name');
  }
  if (OWN_NAMES.has(def.name.toLowerCase()))
    throw new ExternalToolError(`tool name ${JSON.stringify(def.name)} is Hearth's own tool's name (in any letter case); choose another name`, 'bad_name');
  if (typeof def.description !== 'string' || !def.description.trim()) {
    throw new ExternalToolError(`tool ${def.name}: a description is required (the model reads it to know when to call the tool)`, 'bad_tool');
  }
  if (def.description.length > MAX_DESCRIPTION)
    throw new ExternalToolError(`tool ${def.name}: the description is longer than ${MAX_DESCRIPTION} characters`, 'bad_tool');
  if (def.capability !== 'read' && def.capability !== 'actuator') {
    throw new ExternalToolError(`tool ${def.name}: capability must be read or actuator, got ${JSON.stringify(def.capability)}`, 'bad_tool');
  }
  if (def.timeoutMs !== undefined && !(Number.isFinite(def.timeoutMs) && def.timeoutMs > 0)) {
    throw new ExternalToolError(`tool ${def.name}: timeoutMs must be a positive number`, 'bad_tool');
  }
  const p = def.parameters;
  if (!p || typeof p !== 'object' || Array.isArray(p) || (p.type !== undefined && p.type !== 'object')) {
    throw new ExternalToolError(`tool ${def.name}: parameters must be a JSON Schema of type object`, 'bad_schema');
  }
  // Every caller's arguments meet this schema on the event loop: its work must be bounded (schema-cost.ts).
  const costly = schemaCostProblem(p);
  if (costly) throw new ExternalToolError(`tool ${def.name}: parameters: ${costly}`, 'bad_schema');
  try {
    // A caller's string never meets a pattern that can backtrack for minutes (linear-patterns.ts).
    return createAjv({ useDefaults: true, coerceTypes: false, unicodeRegExp: false, code: { regExp: linearRegExp } }).compile(p);
  } catch (err) {
    throw new ExternalToolError(`tool ${def.name}: parameters are not a valid JSON Schema: ${(err as Error).message}`, 'bad_schema');
  }
}

/**
 * The action a policy rule sees: `read` for a read tool; for an actuator the `action` argument when its
 * schema declares one, else `actuate`. Never `read` for an actuator: the policy lets reads through by
 * default, and a caller must not make an actuation one by sending `"action": "read"`.
 */
export function externalAction(capability: Capability, args: Record<string, unknown>, declaresAction = true): string {
  if (capability === 'read') return 'read';
  const action = declaresAction && typeof args.action === 'string' && args.action ? args.action : 'actuate';
  return action === 'read' ? 'actuate' : action;
}

/**
 * The actions a call of this tool can be judged as (what decides whom it is offered to): `actuate`,
 * or the values an `action` argument's enum allows; none (unknown: offered as if any could be allowed)
 * when the schema declares an `action` of any value.
 */
function declaredActions(def: ExternalToolDef, declaresAction: boolean): string[] {
  if (!declaresAction) return ['actuate'];
  const schema = (def.parameters as { properties: Record<string, { enum?: unknown; const?: unknown; default?: unknown }> }).properties.action;
  const values = Array.isArray(schema?.enum) ? schema.enum : schema?.const !== undefined ? [schema.const] : undefined;
  if (!values) return [];
  const actions = values.filter((v): v is string => typeof v === 'string' && v !== '').map((v) => (v === 'read' ? 'actuate' : v));
  // A call without the argument is judged as `actuate` (externalAction), unless a default fills it in.
  return [...new Set([...actions, ...(typeof schema.default === 'string' ? [] : ['actuate'])])];
}

/**
 * Wrap a handler into a host tool with validation, policy, approvals and audit.
 * `validate`: the arguments' validator when the caller already checked the definition (compiled once).
 */
export function createExternalTool(def: ExternalToolDef, deps: ExternalToolDeps, validate: ValidateFunction = checkExternalToolDef(def)): GeneratedTool {
  const parameters: JsonSchema = { type: 'object', properties: {}, ...def.parameters };
  const timeoutMs = def.timeoutMs ?? DEFAULT_EXTERNAL_TIMEOUT_MS;
  // Only an `action` the schema declares names the action; any other is just an argument.
  const declared = (def.parameters as { properties?: unknown }).properties;
  const declaresAction = !!declared && typeof declared === 'object' && Object.hasOwn(declared, 'action');
  const tool: GeneratedTool = {
    name: def.name,
    description: def.description,
    parameters,
    capability: def.capability,
    meta: { entityIds: [], kinds: [], actions: def.capability === 'read' ? [] : declaredActions(def, declaresAction) },
    handler: async (rawArgs, call) => {
      try {
        return await run(rawArgs, call);
      } catch (err) {
        deps.log.error({ err, tool: def.name, requestId: call.requestId }, 'external tool call failed unexpectedly');
        return FAIL(`failed: ${(err as Error).message}`);
      }
    },
  };

  const entry = (call: ToolCall, args: Record<string, unknown>, action: string, decision: PolicyDecision | undefined, approvedBy?: string): AuditEntry => ({
    requestId: call.requestId,
    principal: call.principal.id,
    session: call.session,
    runId: call.runId,
    tool: def.name,
    entityId: null,
    action,
    args,
    decision: decision?.effect ?? 'none',
    ruleId: decision?.ruleId ?? null,
    reason: `${decision?.reason ?? ''}${approvedBy ? ` (approved: ${approvedBy})` : ''}; tool of ${def.source}`,
  });

  const byRequestId = (id: string): AuditRow | undefined => {
    try {
      return deps.audit.byRequestId(id);
    } catch {
      return undefined;
    }
  };

  const record = (e: AuditEntry, outcome: 'denied' | 'failed', error: string): number | undefined => {
    try {
      return deps.audit.record(e, { outcome, error });
    } catch (err) {
      deps.log.error({ err: errorOf(err), requestId: e.requestId }, 'audit row could not be written');
      return undefined;
    }
  };

  /** Refused before running: actuators always leave a row, reads only when the policy refused them. */
  const rejected = (
    call: ToolCall,
    args: Record<string, unknown>,
    action: string,
    text: string,
    decision?: PolicyDecision,
    approvalId?: string,
  ): ToolResultObject => {
    let auditId: number | undefined;
    if ((def.capability === 'actuator' || decision) && !byRequestId(call.requestId)) {
      auditId = record(entry(call, args, action, decision), decision ? 'denied' : 'failed', text);
    }
    return FAIL(text, {
      auditId,
      source: def.source,
      ...(decision ? { decision: decision.effect, ruleId: decision.ruleId } : {}),
      ...(approvalId ? { approvalId } : {}),
    });
  };

  const fromEarlierRow = (row: AuditRow, call: ToolCall, args: Record<string, unknown>): ToolResultObject => {
    // The same request id with another call is never a retry (as for device tools).
    if (row.tool !== def.name || row.principal !== call.principal.id || canonicalJson(row.args) !== canonicalJson(args)) {
      return FAIL(
        `refused: request id ${row.requestId} was already used for another call; a retry must repeat the same tool and arguments, and a new call needs a new request id. Nothing was run.`,
        { duplicate: true, mismatch: true },
      );
    }
    const text = `${row.outcome === 'pending' ? 'still running' : row.outcome}: request ${row.requestId} was already handled (audit #${row.id}); it was not run again.`;
    return row.outcome === 'confirmed' || row.outcome === 'unconfirmed' || row.outcome === 'pending'
      ? { text, details: { auditId: row.id, duplicate: true } }
      : FAIL(text, { auditId: row.id, duplicate: true });
  };

  /** The handler, bounded by the timeout and the call's signal. */
  const invoke = async (
    args: Record<string, unknown>,
    call: ToolCall,
  ): Promise<{ kind: 'ok' | 'timeout' | 'aborted' | 'threw'; result?: ToolResultObject; error?: string }> => {
    const controller = new AbortController();
    const onAbort = () => controller.abort(call.signal.reason);
    call.signal.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => controller.abort(new ExternalToolTimeout(timeoutMs)), timeoutMs);
    try {
      const stopped = new Promise<never>((_, reject) => {
        controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true });
      });
      stopped.catch(() => undefined);
      const raw = await Promise.race([Promise.resolve().then(() => def.handler(args, { ...call, signal: controller.signal })), stopped]);
      return { kind: 'ok', result: normalize(raw) };
    } catch (err) {
      if (controller.signal.aborted) return controller.signal.reason instanceof ExternalToolTimeout ? { kind: 'timeout' } : { kind: 'aborted' };
      return { kind: 'threw', error: err instanceof Error ? err.message : String(err) };
    } finally {
      clearTimeout(timer);
      call.signal.removeEventListener('abort', onAbort);
    }
  };

  async function run(rawArgs: Record<string, unknown>, call: ToolCall): Promise<ToolResultObject> {
    const outOfBounds = argumentBoundsProblem(rawArgs);
    if (outOfBounds) return rejected(call, argumentSummary(rawArgs), 'actuate', `invalid arguments: ${outOfBounds}`);
    const args: Record<string, unknown> =
      rawArgs && typeof rawArgs === 'object' && !Array.isArray(rawArgs) ? structuredClone(rawArgs) : ({ value: rawArgs } as Record<string, unknown>);
    const valid = !!rawArgs && typeof rawArgs === 'object' && !Array.isArray(rawArgs) && validate(args);
    // Read after validation: the schema's defaults are filled in by then, and the policy judges the action the flow will get.
    const action = externalAction(def.capability, args, declaresAction);
    if (!valid) {
      const problems =
        rawArgs && typeof rawArgs === 'object' && !Array.isArray(rawArgs)
          ? schemaProblems(validate.errors, args)
              .map((p) => `${p.path === '(top level)' ? 'arguments' : `"${p.path}"`} ${p.message}`)
              .join('; ')
          : 'arguments must be a JSON object';
      return rejected(call, args, action, `invalid arguments: ${problems}`);
    }
    if (call.signal.aborted) return FAIL('cancelled before it started; nothing was done');

    if (def.capability === 'actuator') {
      const earlier = byRequestId(call.requestId);
      if (earlier) return fromEarlierRow(earlier, call, args);
    }
    const request: PolicyRequest = { principal: call.principal, tool: def.name, capability: def.capability, action, args };
    const decision = deps.policy.decide(request);
    if (decision.effect === 'deny' || (decision.effect === 'confirm' && def.capability === 'read')) {
      return rejected(call, args, action, `not allowed: ${decision.reason}`, decision);
    }
    let approvedBy: string | undefined;
    if (decision.effect === 'confirm') {
      // The same approver check and hold as device tools (policy/approvals.ts).
      const answer = call.approvalId ? { note: call.approvalId, by: call.approvedBy ?? call.principal } : undefined;
      const settled = settleConfirm({ policy: deps.policy, approvals: deps.approvals }, request, decision, answer);
      if (!settled.ok) return rejected(call, args, action, settled.text, settled.decision, settled.approvalId);
      approvedBy = settled.approvedBy;
    }

    if (def.capability === 'read') {
      const r = await invoke(args, call);
      if (r.kind === 'ok') return r.result!;
      if (r.kind === 'timeout') return FAIL(`failed: ${def.name} did not answer within ${timeoutMs} ms`, { source: def.source });
      if (r.kind === 'aborted') return FAIL('cancelled', { source: def.source });
      return FAIL(`failed: ${r.error}`, { source: def.source });
    }

    // Fail closed: no audit row, no run.
    const base = entry(call, args, action, decision, approvedBy);
    let auditId: number;
    try {
      auditId = deps.audit.begin(base);
    } catch (err) {
      const earlier = (err as { code?: string }).code === 'AUDIT_DUPLICATE' ? byRequestId(call.requestId) : undefined;
      if (earlier) return fromEarlierRow(earlier, call, args);
      deps.log.error({ err: errorOf(err), tool: def.name }, 'audit unavailable; call refused');
      return FAIL(`refused: the audit log cannot be written (${(err as Error).message}); nothing was run`);
    }
    const started = performance.now();
    const r = await invoke(args, call);
    const latencyMs = performance.now() - started;
    const details = { auditId, source: def.source, decision: decision.effect, ruleId: decision.ruleId, latencyMs };
    const finish = (outcome: 'confirmed' | 'unconfirmed' | 'failed' | 'interrupted', error: string | null, echo: string | null = null) => {
      try {
        deps.audit.finish(auditId, { outcome, error, latencyMs, echo });
      } catch (err) {
        deps.log.error({ err: errorOf(err), auditId }, 'audit row could not be completed');
      }
    };
    switch (r.kind) {
      case 'ok': {
        const result = r.result!;
        const text = result.text ?? (result.isError ? 'failed' : 'done');
        if (result.isError) finish('failed', text.slice(0, 500));
        else finish('confirmed', null, text.slice(0, 2000));
        return { ...result, text, details: { ...(result.details ?? {}), ...details } };
      }
      case 'timeout':
        finish('unconfirmed', `no answer within ${timeoutMs} ms`);
        return { text: `unconfirmed: ${def.name} did not answer within ${timeoutMs} ms; it may still act.`, details };
      case 'aborted':
        finish('interrupted', 'cancelled while running');
        return FAIL('cancelled while running; an action already under way is not undone', details);
      case 'threw':
        finish('failed', r.error ?? 'failed');
        return FAIL(`failed: ${r.error}`, details);
    }
  }

  return tool;
}

export interface ExternalToolsEvents {
  changed: [tools: GeneratedTool[]];
}

/**
 * The external tools of one tool set. ToolSet owns one and merges its tools
 * into the generated set (three lines: see the report / externalToolsOf).
 */
export class ExternalTools extends EventEmitter<ExternalToolsEvents> {
  private readonly tools = new Map<string, GeneratedTool>();

  /** `taken(name)`: is the name already used by a generated (device) tool? */
  constructor(private readonly taken: (name: string) => boolean = () => false) {
    super();
  }

  /** Add a tool; returns its remover. Throws ExternalToolError on a taken name. */
  add(tool: GeneratedTool): () => void {
    // Names that differ only in letter case read as one tool to a model: taken is taken in any case.
    const folded = tool.name.toLowerCase();
    const held = [...this.tools.keys()].find((n) => n.toLowerCase() === folded);
    if (held) throw new ExternalToolError(`a tool named ${held} is already declared`, 'name_taken');
    if (this.taken(tool.name) || this.taken(folded))
      throw new ExternalToolError(`a device tool is already named ${tool.name}; choose another name`, 'name_taken');
    this.tools.set(tool.name, tool);
    this.emit('changed', this.all());
    return () => this.remove(tool);
  }

  remove(tool: GeneratedTool): boolean {
    if (this.tools.get(tool.name) !== tool) return false;
    this.tools.delete(tool.name);
    this.emit('changed', this.all());
    return true;
  }

  all(): GeneratedTool[] {
    return [...this.tools.values()];
  }

  get(name: string): GeneratedTool | undefined {
    return this.tools.get(name.startsWith('host__') ? name.slice(6) : name);
  }
}

/** The flow tools of a tool set. */
export function externalToolsOf(toolSet: { external: ExternalTools }): ExternalTools {
  return toolSet.external;
}
