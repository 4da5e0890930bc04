// The one handler pipeline every tool call goes through, from every front door:
//   validate -> resolve entity -> policy -> serialize per device -> audit(pending)
//   -> publish (QoS 1) -> await the matching state echo -> audit(outcome) -> result
// A result says `confirmed` only when the device reported the asked state;
// the audit says only what is known (see Outcome in src/audit/types.ts): a
// command that may have left is never `failed` or `not_sent`, and a report
// that comes after `unconfirmed` is appended as a follow-up ("confirmed late").
import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type { ValidateFunction } from 'ajv';
import pLimit, { type LimitFunction } from 'p-limit';
import type { StoredAuditRow } from '../audit/row.js';
import type { AuditListFilter } from '../audit/store.js';
import type { AuditEntry, AuditLog, AuditRow } from '../audit/types.js';
import { CommandRefused, type CommandGate } from '../devices/command-gate.js';
import { encodeCommand, isConfirmedBy, isStateless, type Command, type OutgoingMessage } from '../devices/commands.js';
import { heldTo } from '../devices/dangerous-words.js';
import { DEFAULT_CONFIRM_TIMEOUT_MS } from '../devices/defaults.js';
import { ACTUATOR_KINDS, type Entity, type EntityKind, FRAME_KINDS, stateTopicsOf } from '../devices/model.js';
import type { DeviceRegistry } from '../devices/registry.js';
import type { EntityState, Silence, StateCache } from '../devices/state-cache.js';
import type { HistoryStore } from '../history/store.js';
import type { Logger } from '../log.js';
import { canonicalJson, type SendsNow, settleConfirm } from '../policy/approvals.js';
import { missingPermission } from '../policy/missing-permission.js';
import { convertUnits } from './units.js';
import type { ApprovalStore, PolicyDecision, PolicyEngine, PolicyRequest } from '../policy/types.js';
import { createAjv, schemaProblems } from '../util/ajv.js';
import { formatDuration } from '../util/time.js';
import { argumentBoundsProblem, argumentSummary } from './argument-bounds.js';
import { quoted } from './device-text.js';
import { groupedToolFor, type ToolTarget } from './generator.js';
import { groupResult, memberArgs, memberOutcome, selectGroup, type MemberResult } from './group-call.js';
import { fitImage, type ImageLimits } from './images.js';
import { actionsOf, ArgumentError, choicesText, toCommand, UNADVERTISED_LIGHT_ARGUMENTS } from './parameters.js';
import { historyAnswer } from './history-text.js';
import { AUDIT_REFUSAL, readAudit } from './records-text.js';
import { stateText } from './state-text.js';
import type { GeneratedTool, JsonSchema, ToolCall, ToolResultObject } from './types.js';
import { errorOf } from '../util/error.js';

/** The broker connection as the pipeline sees it: whether it is up. Commands leave only through the gate. */
export interface Publisher {
  readonly connected: boolean;
  /** When the connection last came back after it was lost, and whether on another node (a failover). */
  readonly lastReconnect?: { at: number; moved: boolean };
  on(event: 'state', fn: (state: string) => void): unknown;
  off(event: 'state', fn: (state: string) => void): unknown;
  /** Resolves once these topics' subscriptions are acknowledged (bounded); undefined when none waits (MqttConnection). */
  whenSubscribed?(topics: readonly string[], timeoutMs: number, signal?: AbortSignal): Promise<boolean> | undefined;
}

export interface PipelineDeps {
  registry: DeviceRegistry;
  cache: StateCache;
  mqtt: Publisher;
  /** mqtt.send_wait_ms: how long a call waits for a lost connection to come back before answering not_sent (0: at once). */
  sendWaitMs?: number;
  /** Every command goes out through it: only on a command topic of the entity the policy decided on. */
  gate: CommandGate;
  policy: PolicyEngine;
  audit: AuditLog;
  approvals?: ApprovalStore;
  log: Logger;
  imageLimits?: Partial<ImageLimits>;
  /** The history table, for get_history (absent: the tool says history is off). */
  history?: HistoryStore;
  /**
   * The one read check every surface asks (Hearth.readDenied): get_history
   * also answers to it, so a rule on an entity's own read tool hides its
   * history from the agent as it hides its state from the page.
   */
  readDenied?: (principal: ToolCall['principal'], entity: Entity) => string | undefined;
  /** The audit's rows by the call index (SqliteAuditLog.list), for get_audit (absent: the tool says it cannot). */
  auditRows?: (filter: AuditListFilter) => StoredAuditRow[];
  /**
   * explain_policy's answer for this caller (the assembly's: it knows the tools and the principals). The pipeline
   * has checked the entity is one the caller may read.
   */
  explainPolicy?: (call: ToolCall, entity: Entity, action: string, forWhom: string | undefined) => ToolResultObject;
  /** Override confirmation timeouts by kind (tests, slow homes). */
  timeouts?: Partial<Record<EntityKind, number>>;
  now?: () => number;
}

/** A call waiting for its device's report. */
interface EchoWaiter {
  change(state: EntityState): void;
  broker(): void;
}

/** What the caller asked for, resolved to an entity and a command. */
interface Resolved {
  entity: Entity;
  command: Command;
}

/**
 * A report that says the command failed (not merely "not yet"): the device's own error state.
 * Returns what it said, or undefined.
 */
function reportsFailure(_entity: Entity, command: Command, state: EntityState): string | undefined {
  if ((command.action === 'lock' || command.action === 'unlock') && state.value === 'jammed') return 'jammed';
  return undefined;
}

/** What a call with nothing to confirm it says: done once the broker has it, and why no more can be known. */
function statelessText(command: Command, name: string): string {
  switch (command.action) {
    case 'press':
      return `confirmed: pressed ${name} (a button has no state to report).`;
    case 'activate':
      return `confirmed: activated the scene ${name} (the broker has the command; a scene has no state to report).`;
    case 'locate':
      return `confirmed: asked ${name} to make itself heard (the broker has the command; locating has no state to report).`;
    case 'send_message':
      return `confirmed: sent the message to ${name} (the broker has it; a message has no state to report).`;
    default:
      return `sent: ${command.action.replace(/_/g, ' ')} to ${name}; it reports no state, so whether it took effect cannot be confirmed.`;
  }
}

/** How long after an unconfirmed call a matching report still counts as its late confirmation (at least). */
const LATE_WINDOW_MS = 5 * 60_000;
/** Longest a command waits for the broker to acknowledge its entity's fresh state subscription (Publisher.whenSubscribed). */
const SUBSCRIBE_WAIT_MS = 5_000;

/** Take out of `args` the keys a schema does not list but the tool takes (checked later); returned to put back. */
function setAside(args: Record<string, unknown>, keys: readonly string[], schema: JsonSchema): Record<string, unknown> | undefined {
  if (!args || typeof args !== 'object' || Array.isArray(args)) return undefined;
  const listed = (schema.properties as Record<string, unknown> | undefined) ?? {};
  let out: Record<string, unknown> | undefined;
  for (const k of keys) {
    if (!(k in args) || k in listed) continue;
    out ??= {};
    out[k] = args[k];
    delete args[k];
  }
  return out;
}

const FAIL = (text: string, details: Record<string, unknown> = {}): ToolResultObject => ({ text, isError: true, details });

export class Pipeline {
  private readonly ajv = createAjv({ useDefaults: true, coerceTypes: false });
  private readonly validators = new Map<string, ValidateFunction>();
  /** The same, by schema object: no JSON.stringify on every call. */
  private readonly validatorOf = new WeakMap<object, ValidateFunction>();
  private readonly deviceQueues = new Map<string, LimitFunction>();
  /** Per entity: the unconfirmed call still watched for a late report (a newer command ends the watch). */
  private readonly lateWatches = new Map<string, { report(state: EntityState): void; stop(): void }>();
  /** One cache listener serves every late watch (installed while there is one). */
  private readonly onLateReport = (state: EntityState, entity: Entity) => this.lateWatches.get(entity.id)?.report(state);
  private readonly now: () => number;

  constructor(private readonly deps: PipelineDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** A validator per distinct schema (most entities of a kind share one). */
  private validator(tool: GeneratedTool): ValidateFunction {
    // The whole schema, with the bounds a model is not told (tools/model-schema.ts).
    const schema = tool.argumentSchema ?? tool.parameters;
    const known = this.validatorOf.get(schema);
    if (known) return known;
    const key = JSON.stringify(schema);
    let v = this.validators.get(key);
    if (!v) {
      v = this.ajv.compile(schema);
      this.validators.set(key, v);
    }
    this.validatorOf.set(schema, v);
    return v;
  }

  /** The handler behind every generated tool. Never throws: failures are failed results. */
  readonly invoke = async (tool: GeneratedTool, target: ToolTarget, rawArgs: Record<string, unknown>, call: ToolCall): Promise<ToolResultObject> => {
    try {
      const result = await this.run(tool, target, rawArgs, call);
      // The caller is answered only what the audit holds: the outcome's commit comes first (issue 40).
      await this.deps.audit.outcomesCommitted?.();
      return result;
    } catch (err) {
      this.deps.log.error({ err, tool: tool.name, requestId: call.requestId }, 'tool call failed unexpectedly');
      return FAIL(`failed: ${(err as Error).message}`);
    }
  };

  /**
   * An entity agents are shown (Entity.exposed), by id: one a person has not exposed is, to every tool, an
   * entity that does not exist (a grouped tool's `entity` argument cannot reach it either).
   */
  private shown(id: string): Entity | undefined {
    const entity = this.deps.registry.entity(id);
    return entity && entity.exposed !== false ? entity : undefined;
  }

  private async run(tool: GeneratedTool, target: ToolTarget, rawArgs: Record<string, unknown>, call: ToolCall): Promise<ToolResultObject> {
    // Before anything recursive (clone, validation, hashing) touches them; the audit keeps only a summary.
    const outOfBounds = argumentBoundsProblem(rawArgs);
    if (outOfBounds) {
      const entity = target.type === 'actuate' && target.entityId ? this.deps.registry.entity(target.entityId) : undefined;
      return this.rejected(tool, call, argumentSummary(rawArgs), entity, `invalid arguments: ${outOfBounds}`);
    }
    let args = rawArgs && typeof rawArgs === 'object' && !Array.isArray(rawArgs) ? structuredClone(rawArgs) : (rawArgs as never);
    // People's units ("80%", "2700K") to what the tool takes, before the schema; another unit is refused naming the one wanted.
    // A light's arguments on its own scale (a flow's `brightness`) are taken, not advertised: toCommand checks them.
    let aside: Record<string, unknown> | undefined;
    if (target.type === 'actuate' || target.type === 'group') {
      const entity = target.type === 'actuate' ? this.shown(target.entityId ?? String(args?.entity ?? '')) : undefined;
      const converted = convertUnits(entity, args);
      if (typeof converted === 'string') return this.rejected(tool, call, args, entity, `invalid arguments: ${converted}`);
      args = converted;
      if (entity?.kind === 'light') aside = setAside(args, UNADVERTISED_LIGHT_ARGUMENTS, tool.parameters);
    }
    const validate = this.validator(tool);
    if (!validate(args)) {
      if (aside) Object.assign(args, aside);
      const problems = schemaProblems(validate.errors, args).map((p) => `${p.path === '(top level)' ? 'arguments' : `"${p.path}"`} ${p.message}`);
      return this.rejected(tool, call, args, undefined, `invalid arguments: ${problems.join('; ')}`);
    }
    if (aside) Object.assign(args, aside);
    if (call.signal.aborted) return FAIL('cancelled before it started; nothing was done');
    // A refused read has nothing to record; a refused actuation is recorded below, and not run.
    if (call.refused && target.type !== 'actuate' && target.type !== 'group') return FAIL(`not done: ${call.refused}`);
    switch (target.type) {
      case 'state':
        return this.readState(tool, call, args);
      case 'find':
        return this.find(tool, call, args);
      case 'history': {
        const entity = this.shown(String(args.entity ?? ''));
        if (!entity) return FAIL(`unknown entity ${quoted(String(args.entity ?? ''))}; use find_entities or get_state to list them`);
        const denied = this.checkRead(tool, call, args, entity);
        if (denied) return unknownToCaller(denied, String(args.entity));
        if (this.deps.readDenied?.(call.principal, entity))
          return FAIL(`unknown entity ${quoted(String(args.entity))}; use find_entities or get_state to list them`);
        if (!this.deps.history) return FAIL('history is not recorded by this Hearth');
        return historyAnswer(this.deps.history, entity, args, this.now());
      }
      case 'audit':
        return this.readAudit(call, args);
      case 'policy': {
        const entity = this.shown(String(args.entity ?? ''));
        if (!entity || this.deps.readDenied?.(call.principal, entity))
          return FAIL(`unknown entity ${quoted(String(args.entity ?? ''))}; use find_entities or get_state to list them`);
        if (!this.deps.explainPolicy) return FAIL('the policy cannot be explained by this Hearth');
        return this.deps.explainPolicy(call, entity, String(args.action), typeof args.for === 'string' ? args.for : undefined);
      }
      case 'read':
      case 'camera': {
        const id = target.entityId ?? String(args.camera ?? args.entity ?? '');
        const entity = this.shown(id);
        if (!entity || (target.type === 'camera' && !FRAME_KINDS.has(entity.kind))) {
          return FAIL(`unknown ${target.type === 'camera' ? 'camera' : 'entity'} ${quoted(id)}; use find_entities or get_state to list them`);
        }
        const denied = this.checkRead(tool, call, args, entity);
        // An entity's own read tool may say it is not allowed (its name is the caller's already); a tool over
        // many entities answers as for one that does not exist.
        if (denied) return target.entityId ? denied : unknownToCaller(denied, id, target.type === 'camera' ? 'camera' : 'entity');
        return target.type === 'camera'
          ? this.readCamera(entity)
          : { text: stateText(entity, this.deps.cache.get(entity.id), this.now()), details: { entities: [entity.id] } };
      }
      case 'actuate':
        return this.actuate(tool, target, args, call);
      case 'group':
        return this.actuateGroup(tool, target, args, call);
    }
  }

  // ---------------------------------------------------------------- reads

  /** get_audit: only for a caller the policy lets read the audit; rows on entities it may not read are not shown. */
  private readAudit(call: ToolCall, args: Record<string, unknown>): ToolResultObject {
    if (!this.deps.policy.mayReadAudit?.(call.principal)) return FAIL(AUDIT_REFUSAL);
    if (!this.deps.auditRows) return FAIL('the audit cannot be read by this Hearth');
    let entity: Entity | undefined;
    if (typeof args.entity === 'string') {
      entity = this.shown(args.entity);
      if (!entity || this.deps.readDenied?.(call.principal, entity))
        return FAIL(`unknown entity ${quoted(args.entity)}; use find_entities or get_state to list them`);
    }
    const readable = (id: string) => {
      const e = this.deps.registry.entity(id);
      return !e || !this.deps.readDenied?.(call.principal, e);
    };
    return readAudit(this.deps.auditRows, entity, args, (id) => this.deps.registry.entity(id)?.name, readable, this.now());
  }

  private checkRead(tool: GeneratedTool, call: ToolCall, args: Record<string, unknown>, entity?: Entity): ToolResultObject | undefined {
    const decision = this.deps.policy.decide({
      principal: call.principal,
      tool: tool.name,
      capability: 'read',
      action: 'read',
      entityId: entity?.id,
      area: entity?.area,
      kind: entity?.kind,
      deviceClass: entity?.deviceClass,
      args,
    });
    if (decision.effect === 'allow') return undefined;
    return this.rejected(tool, call, args, entity, `not allowed: ${decision.reason}`, decision);
  }

  private readState(tool: GeneratedTool, call: ToolCall, args: Record<string, unknown>): ToolResultObject {
    // What this caller may not read is neither named nor counted: to it, such an entity does not exist.
    const readable = (e: Entity) => !this.deps.readDenied?.(call.principal, e);
    let entities = this.deps.registry.exposedEntities();
    if (typeof args.entity === 'string') {
      const one = this.shown(args.entity);
      if (!one || !readable(one)) {
        if (one) this.checkRead(tool, call, args, one);
        return FAIL(`unknown entity ${quoted(args.entity)}; use find_entities to search`);
      }
      entities = [one];
    }
    if (typeof args.area === 'string') {
      const area = args.area.trim().toLowerCase();
      entities = entities.filter((e) => (e.area ?? '').toLowerCase() === area && readable(e));
      if (!entities.length) {
        const areas = [
          ...new Set(
            this.deps.registry
              .entities()
              .filter(readable)
              .map((e) => e.area)
              .filter(Boolean),
          ),
        ] as string[];
        return FAIL(`no entities in area ${quoted(args.area)}; areas are ${areas.map((a) => quoted(a)).join(', ')}`);
      }
    }
    const lines: string[] = [];
    const shown: string[] = [];
    const batteryTold = new Set<string>();
    for (const e of entities) {
      if (!readable(e) || this.checkRead(tool, call, args, e)) continue;
      // One entity asked for: its choices too (the grouped tools' schemas do not list them).
      const choices = typeof args.entity === 'string' ? choicesText(e) : '';
      lines.push(stateText(e, this.deps.cache.get(e.id), this.now()) + (choices ? ` Choices: ${choices}.` : '') + this.batteryOf(e, batteryTold));
      shown.push(e.id);
    }
    if (!lines.length) return FAIL('nothing to read here');
    const MAX = 200;
    const more = lines.length > MAX ? `\n(${lines.length - MAX} more; ask by area or entity)` : '';
    // details.entities: what was read, for doors that return structured content (MCP).
    return {
      text: lines.slice(0, MAX).join('\n') + more,
      details: { entities: shown.slice(0, MAX) },
    };
  }

  /**
   * A device's battery level said with its state, once per device: a battery reading is a diagnostic, not shown
   * to agents as its own entity, yet "is the lock's battery low?" deserves an answer.
   */
  private batteryOf(e: Entity, told: Set<string>): string {
    if (told.has(e.deviceId)) return '';
    const battery = this.deps.registry
      .device(e.deviceId)
      ?.entities.find((b) => b.exposed === false && b.kind === 'sensor' && b.deviceClass === 'battery' && typeof this.deps.cache.get(b.id)?.value === 'number');
    if (!battery) return '';
    told.add(e.deviceId);
    return ` Battery: ${String(this.deps.cache.get(battery.id)!.value)}${battery.unit ? ` ${battery.unit}` : ' %'}.`;
  }

  private find(tool: GeneratedTool, call: ToolCall, args: Record<string, unknown>): ToolResultObject {
    const words = String(args.query ?? '')
      .toLowerCase()
      .split(/\s+/)
      .filter(Boolean);
    const area = typeof args.area === 'string' ? args.area.toLowerCase() : undefined;
    const limit = Number(args.limit ?? 20);
    const scored: Array<{ e: Entity; score: number }> = [];
    for (const e of this.deps.registry.exposedEntities()) {
      if (args.kind && e.kind !== args.kind) continue;
      if (area && (e.area ?? '').toLowerCase() !== area) continue;
      const hay = [e.name, e.id, e.area ?? '', ...e.aliases, e.deviceClass ?? ''].join(' ').toLowerCase();
      const score = words.reduce((s, w) => s + (hay.includes(w) ? 1 : 0), 0);
      if (words.length && score === 0) continue;
      scored.push({ e, score });
    }
    scored.sort((a, b) => b.score - a.score || a.e.id.localeCompare(b.e.id));
    const rows = scored.slice(0, limit).filter(({ e }) => !this.checkRead(tool, call, args, e));
    if (!rows.length) return { text: 'no matching entities', details: { entities: [] } };
    return {
      details: { entities: rows.map(({ e }) => e.id) },
      text:
        rows
          .map(({ e }) => {
            const tool = ACTUATOR_KINDS.has(e.kind) && !actionsOf(e).length ? 'get_state' : groupedToolFor(e.kind);
            const choices = choicesText(e);
            return `${e.id}: ${quoted(e.name)}, ${e.kind}${e.area ? `, area ${quoted(e.area, 40)}` : ''}; use ${tool}${choices ? `; ${choices}` : ''}`;
          })
          .join('\n') + (scored.length > limit ? `\n(${scored.length - limit} more; narrow the search)` : ''),
    };
  }

  private async readCamera(entity: Entity): Promise<ToolResultObject> {
    const state = this.deps.cache.get(entity.id);
    if (!state?.frame) {
      return FAIL(`${quoted(entity.name)} has not sent a frame yet${state?.available === false ? ' and is offline' : ''}`);
    }
    const image = await fitImage(state.frame.bytes, state.frame.contentType, this.deps.imageLimits);
    const age = this.now() - state.frame.at;
    return {
      text:
        `Latest frame from the camera ${quoted(entity.name)}${entity.area ? ` (area ${quoted(entity.area, 40)})` : ''}, ${state.retained ? 'taken before Hearth subscribed (kept by the broker; age unknown)' : `taken ${formatDuration(age)} ago`}` +
        `${image.resized ? `, scaled to ${image.width}x${image.height}` : ''}${state.available === false ? '; the camera is OFFLINE, so this frame may be old' : ''}.`,
      images: [{ url: `data:${image.mimeType};base64,${image.bytes.toString('base64')}`, mimeType: image.mimeType, bytes: image.bytes.length }],
      details: {
        entity: entity.id,
        entities: [entity.id],
        frameAt: state.retained ? null : new Date(state.frame.at).toISOString(),
        originalBytes: state.frame.bytes.length,
        bytes: image.bytes.length,
      },
    };
  }

  // ---------------------------------------------------------------- actuators

  /** What a call on this entity with these arguments would publish now (an approval's grant asks), or why nothing. */
  sendsNow(entityId: string, args: Record<string, unknown>): SendsNow {
    const entity = this.deps.registry.entity(entityId);
    if (!entity) return { gone: `${entityId} is no longer a known entity` };
    const { entity: _drop, ...rest } = args;
    try {
      return { sends: encodeCommand(entity, toCommand(entity, rest)) };
    } catch (err) {
      return { gone: `its command can no longer be built: ${(err as Error).message}` };
    }
  }

  private resolveActuation(target: Extract<ToolTarget, { type: 'actuate' }>, args: Record<string, unknown>): Resolved | string {
    const id = target.entityId ?? String(args.entity ?? '');
    const entity = this.shown(id);
    if (!entity) return `unknown entity ${quoted(id)}; use find_entities to search`;
    if (!target.kinds.includes(entity.kind)) return `${quoted(entity.name)} is a ${entity.kind}, not a ${target.kinds.join(' or ')}`;
    const { entity: _drop, ...rest } = args;
    try {
      return { entity, command: toCommand(entity, rest) };
    } catch (err) {
      if (err instanceof ArgumentError) return `invalid arguments: ${err.message}`;
      throw err;
    }
  }

  private async actuate(
    tool: GeneratedTool,
    target: Extract<ToolTarget, { type: 'actuate' }>,
    args: Record<string, unknown>,
    call: ToolCall,
  ): Promise<ToolResultObject> {
    const resolved = this.resolveActuation(target, args);
    const entityHint = target.entityId ? this.shown(target.entityId) : undefined;
    if (typeof resolved === 'string') return this.rejected(tool, call, args, entityHint, resolved);
    const { entity, command } = resolved;

    // A retried request id is one actuation: answer from the row already written.
    const earlier = mayBeRetry(call) ? this.safeByRequestId(call.requestId) : undefined;
    if (earlier) return this.fromEarlierRow(earlier, tool, args, call, entity);

    // A person said no when asked: the attempt is in the audit, as denied by them, and nothing is sent.
    if (call.refused)
      return this.rejected(tool, call, args, entity, `not done: ${call.refused}`, { effect: 'deny', ruleId: null, reason: call.refused }, command.action);

    const judged = this.judge(tool, call, args, entity, command);
    if (!judged.ok) return judged.result;
    const { decision, approvedBy, action } = judged;

    // Calls to one device never interleave; different devices run in parallel.
    return this.queueFor(entity.deviceId)(() => this.execute(tool, call, args, entity, command, decision, approvedBy, action));
  }

  /**
   * The policy on one actuation, judged by what it would send (a "light" whose payload is UNLOCK is held
   * to the rules for locks): the go-ahead, or the refused call's result (recorded). A confirm rule is
   * settled here: an in-band yes that counts, an approval granted earlier, or a new approval request.
   */
  /** A member's (or a lone call's) policy request and decision; `preview` records nothing and uses up no rate limit. */
  private decideActuation(
    tool: GeneratedTool,
    principal: ToolCall['principal'],
    args: Record<string, unknown>,
    entity: Entity,
    command: Command,
    ownTool: string | undefined,
    preview: boolean,
  ): { request: PolicyRequest; decision: PolicyDecision; action: string; sends: OutgoingMessage[] } {
    const sends = messagesOf(entity, command);
    const held = heldTo(
      entity,
      sends.map((m) => m.payload),
    );
    const action = held.action ?? command.action;
    const request: PolicyRequest = {
      principal,
      tool: tool.name,
      capability: 'actuator',
      action,
      entityId: entity.id,
      area: entity.area,
      kind: held.kind,
      deviceClass: held.deviceClass,
      args,
    };
    // What cannot be judged is not sent: refused before any rule is asked (no approval is requested for it).
    if (held.unjudgeable) return { request, decision: { effect: 'deny', ruleId: null, reason: held.unjudgeable }, action, sends };
    const ask = (r: PolicyRequest) => (this.deps.policy.preview ? this.deps.policy.preview(r) : this.deps.policy.decide(r));
    let decision = preview ? ask(request) : this.deps.policy.decide(request);
    if (ownTool && ownTool !== tool.name && decision.effect !== 'deny') {
      // The stricter of the two; asked as a preview, so the member uses up no second rate-limit hit.
      const asOwn = ask({ ...request, tool: ownTool });
      if (asOwn.effect === 'deny' || (asOwn.effect === 'confirm' && decision.effect === 'allow')) decision = asOwn;
    }
    return { request, decision, action, sends };
  }

  private judge(
    tool: GeneratedTool,
    call: ToolCall,
    args: Record<string, unknown>,
    entity: Entity,
    command: Command,
    /** A grouped call's member: its own tool's rules bind it too (a deny on `kitchen_light` is not waived by control_group). */
    ownTool?: string,
  ): { ok: true; decision: PolicyDecision; approvedBy?: string; action: string } | { ok: false; result: ToolResultObject } {
    const { request, decision, action, sends } = this.decideActuation(tool, call.principal, args, entity, command, ownTool, false);
    if (decision.effect === 'deny')
      return {
        ok: false,
        result: this.rejected(tool, call, args, entity, `not allowed: ${decision.reason}. ${missingPermission(request, decision)}`, decision, action),
      };
    let approvedBy: string | undefined;
    if (decision.effect === 'confirm') {
      // Whose yes counts, and the hold when there is none: decided in the policy layer, the same for every door.
      const answer = call.approvalId ? { note: call.approvalId, by: call.approvedBy ?? call.principal } : undefined;
      // The approval binds to where the command goes and what it says, too (a moved command topic needs a new one).
      const settled = settleConfirm({ policy: this.deps.policy, approvals: this.deps.approvals, now: this.now }, request, decision, answer, sends);
      if (!settled.ok) return { ok: false, result: this.rejected(tool, call, args, entity, settled.text, settled.decision, action, settled.approvalId) };
      approvedBy = settled.approvedBy;
    }
    return { ok: true, decision, approvedBy, action };
  }

  /**
   * What a grouped call would be decided before it runs (a chat or a session asking "ask the person
   * first?"): a member a rule holds for a person makes it `confirm`; else any member allowed makes it
   * `allow` (the denied ones are skipped and said when it runs); else the first member's deny. Only
   * what the caller may read counts. Undefined for arguments the call would refuse. Records nothing.
   */
  previewGroup(
    tool: GeneratedTool,
    args: Record<string, unknown>,
    principal: ToolCall['principal'],
    ownToolOf: (entityId: string) => string | undefined,
  ): PolicyDecision | undefined {
    const candidates = new Set(tool.meta.entityIds);
    const visible = this.deps.registry.exposedEntities().filter((e) => candidates.has(e.id) && !this.deps.readDenied?.(principal, e));
    const chosen = selectGroup(args, visible);
    if (typeof chosen === 'string') return undefined;
    let allow: PolicyDecision | undefined;
    let deny: PolicyDecision | undefined;
    for (const entity of chosen) {
      const margs = memberArgs(entity, args);
      if (typeof margs === 'string') continue;
      let command: Command;
      try {
        command = toCommand(entity, { action: margs.action, ...(margs.brightness_pct !== undefined ? { brightness_pct: margs.brightness_pct } : {}) });
      } catch {
        continue;
      }
      const { decision } = this.decideActuation(tool, principal, { ...margs, entity: entity.id }, entity, command, ownToolOf(entity.id), true);
      if (decision.effect === 'confirm') return decision;
      if (decision.effect === 'allow') allow ??= decision;
      else deny ??= decision;
    }
    return allow ?? deny;
  }

  /**
   * A grouped call ("all lights off"): the members are chosen once among what the caller may see,
   * each is judged by the policy on its own and gets its own row (request id `<rid>#<entity>`), as
   * its own call would. The work is shared: one validation, the decisions in one pass, every
   * pending row in one group commit (they reach the audit in the same turn), all publishes at once,
   * and the confirmed outcomes appended in one batch after the result. Per-device order holds: the
   * members go through their device's queue like any call.
   */
  private async actuateGroup(
    tool: GeneratedTool,
    target: Extract<ToolTarget, { type: 'group' }>,
    args: Record<string, unknown>,
    call: ToolCall,
  ): Promise<ToolResultObject> {
    const results: Array<MemberResult | Promise<MemberResult>> = [];
    // Confirmed outcomes wait for the whole call and go to the audit together; any other goes at once
    // (a late report may need to follow it up while the rest still wait).
    const confirmed: Array<{ id: number; completion: Parameters<AuditLog['finish']>[1] }> = [];
    const finish = (id: number, completion: Parameters<AuditLog['finish']>[1]) => {
      if (completion.outcome === 'confirmed') confirmed.push({ id, completion });
      else this.safeFinish(id, completion);
    };
    // The members' decisions and read checks see the rules as they are at the call's start: another process's
    // changes are looked for once, not 150 times (it was a third of the members' work).
    const atOnce = this.deps.policy.atOnce?.bind(this.deps.policy) ?? (<T>(fn: () => T): T => fn());
    const early = atOnce((): ToolResultObject | undefined => {
      // What the caller may not read is not in its group: never acted on, named or counted.
      const visible = this.deps.registry.exposedOfKinds(target.kinds).filter((e) => !this.deps.readDenied?.(call.principal, e));
      const chosen = selectGroup(args, visible);
      if (typeof chosen === 'string') return this.rejected(tool, call, args, undefined, `invalid arguments: ${chosen}`);
      if (call.refused) return this.rejected(tool, call, args, undefined, `not done: ${call.refused}`, { effect: 'deny', ruleId: null, reason: call.refused });
      // A retried request has member rows: one look-up for them all, then each member's own (a new request skips 50).
      const fresh = !mayBeRetry(call);
      const retried = !fresh && this.anyMemberRow(call.requestId);

      for (const entity of chosen) {
        const member: ToolCall = { ...call, requestId: `${call.requestId}#${entity.id}` };
        // A member of a call whose id Hearth drew has an id no earlier row can hold either.
        if (fresh) generatedIds.set(member, member.requestId);
        const margs = memberArgs(entity, args);
        if (typeof margs === 'string') {
          results.push(memberOutcome(entity, this.rejected(tool, member, { entity: entity.id, ...args }, entity, `failed: ${margs}`)));
          continue;
        }
        margs.entity = entity.id;
        let command: Command;
        try {
          command = toCommand(entity, { action: margs.action, ...(margs.brightness_pct !== undefined ? { brightness_pct: margs.brightness_pct } : {}) });
        } catch (err) {
          if (!(err instanceof ArgumentError)) throw err;
          results.push(memberOutcome(entity, this.rejected(tool, member, margs, entity, `invalid arguments: ${err.message}`)));
          continue;
        }
        const earlier = retried ? this.safeByRequestId(member.requestId) : undefined;
        if (earlier) {
          results.push(memberOutcome(entity, this.fromEarlierRow(earlier, tool, margs, member, entity)));
          continue;
        }
        const judged = this.judge(tool, member, margs, entity, command, target.ownTools.get(entity.id));
        if (!judged.ok) {
          results.push(memberOutcome(entity, judged.result));
          continue;
        }
        const { decision, approvedBy, action } = judged;
        results.push(
          this.queueFor(entity.deviceId)(() => this.execute(tool, member, margs, entity, command, decision, approvedBy, action, finish)).then(
            (r) => memberOutcome(entity, r),
            (err: unknown) => {
              this.deps.log.error({ err: errorOf(err), tool: tool.name, requestId: member.requestId }, 'a member of a grouped call failed unexpectedly');
              return { entity, outcome: 'failed' as const, why: (err as Error).message };
            },
          ),
        );
      }
      return undefined;
    });
    if (early) return early;
    const members = await Promise.all(results);
    for (const { id, completion } of confirmed) this.safeFinish(id, completion);
    return groupResult(args, members);
  }

  private queueFor(deviceId: string): LimitFunction {
    let q = this.deviceQueues.get(deviceId);
    if (!q) {
      q = pLimit(1);
      this.deviceQueues.set(deviceId, q);
    }
    return q;
  }

  private async execute(
    tool: GeneratedTool,
    call: ToolCall,
    args: Record<string, unknown>,
    entity: Entity,
    command: Command,
    decision: PolicyDecision,
    approvedBy: string | undefined,
    action: string,
    /** Where the outcome goes (a grouped call batches its members'); default: the audit, off the caller's path. */
    finish: (id: number, completion: Parameters<AuditLog['finish']>[1]) => void = (id, c) => this.safeFinish(id, c),
  ): Promise<ToolResultObject> {
    const name = quoted(entity.name);
    const base = this.entry(tool, call, args, entity, action, decision, approvedBy);
    if (call.signal.aborted) {
      this.safeRecord(base, { outcome: 'not_sent', error: 'cancelled before it was sent' });
      return FAIL('cancelled before it was sent; nothing was done');
    }
    // Without the broker, what we know of availability is stale: that is the first thing to say.
    if (!this.deps.mqtt.connected && !(await this.brokerBack(call.signal))) {
      return this.notSent(base, 'the MQTT broker is not connected; nothing was sent');
    }
    const state = this.deps.cache.get(entity.id);
    if (state?.available === false) {
      return this.notSent(base, `${name} is offline (its availability topic says so); nothing was sent`);
    }
    let messages: ReturnType<typeof encodeCommand>;
    try {
      messages = encodeCommand(entity, command);
    } catch (err) {
      return this.notSent(base, `cannot build the command: ${(err as Error).message}`);
    }
    // The transport's own check, before anything is written or sent (the gate checks again as it sends).
    const refusal = this.deps.gate.check({ entityId: entity.id, action }, messages);
    if (refusal) {
      this.deps.log.warn({ entity: entity.id, topics: messages.map((m) => m.topic), requestId: call.requestId }, refusal);
      const id = this.safeRecord(base, { outcome: 'denied', error: refusal });
      return FAIL(`${refusal}; nothing was sent.`, { auditId: id });
    }
    // A newer command to the entity: a report from now on answers it, not an older unconfirmed one.
    this.lateWatches.get(entity.id)?.stop();

    // Fail closed: no durable audit row, no command. Concurrent calls' rows share one commit and fsync.
    let auditId: number;
    try {
      auditId = this.deps.audit.beginDurable ? await this.deps.audit.beginDurable(base) : this.deps.audit.begin(base);
    } catch (err) {
      // The same request id raced in twice: one actuation only.
      const earlier = (err as { code?: string }).code === 'AUDIT_DUPLICATE' ? this.safeByRequestId(call.requestId) : undefined;
      if (earlier) return this.fromEarlierRow(earlier, tool, args, call, entity);
      this.deps.log.error({ err: errorOf(err), tool: tool.name }, 'audit unavailable; call refused');
      return FAIL(`refused: the audit log cannot be written (${(err as Error).message}); nothing was sent`);
    }
    if (call.signal.aborted) {
      finish(auditId, { outcome: 'not_sent', error: 'cancelled before it was sent' });
      return FAIL('cancelled before it was sent; nothing was done', { auditId });
    }

    const timeoutMs = this.deps.timeouts?.[entity.kind] ?? entity.confirmTimeoutMs ?? DEFAULT_CONFIRM_TIMEOUT_MS[entity.kind];
    // A state topic subscribed a moment ago (the entity just admitted, its move just confirmed): the broker's
    // SUBACK first, bounded, so that the device's answer to this command is heard.
    const subscribing = this.deps.mqtt.whenSubscribed?.(stateTopicsOf(entity), Math.min(timeoutMs, SUBSCRIBE_WAIT_MS), call.signal);
    if (subscribing) {
      await subscribing;
      if (call.signal.aborted) {
        finish(auditId, { outcome: 'not_sent', error: 'cancelled before it was sent' });
        return FAIL('cancelled before it was sent; nothing was done', { auditId });
      }
    }
    const started = performance.now();
    const sentAt = this.now();
    const before = state ? { value: state.value, attributes: { ...state.attributes }, updatedAt: state.updatedAt } : undefined;
    // Listen before publishing so a fast echo is not missed.
    const echo = isStateless(entity, command) ? undefined : this.awaitEcho(entity, command, timeoutMs, call.signal);
    const progress = { handedOver: 0 };
    try {
      await this.deps.gate.publish(
        { entityId: entity.id, action },
        messages,
        { qos: 1, retain: false, expirySeconds: Math.max(1, Math.floor(timeoutMs / 1000)) },
        progress,
      );
    } catch (err) {
      echo?.cancel();
      const latencyMs = performance.now() - started;
      if (err instanceof CommandRefused) {
        const error = `${err.message}; nothing was sent`;
        finish(auditId, { outcome: 'denied', error, latencyMs });
        return FAIL(`refused: ${error}`, { auditId, topics: messages.map((m) => m.topic) });
      }
      // Refused before MQTT.js had it: nothing left. Otherwise the connection closed before the broker's
      // acknowledgement: the command may have reached the device, and only a report can tell.
      if (progress.handedOver === 0 && (err as { sent?: string }).sent === 'no') {
        const error = `could not send the command: ${(err as Error).message}`;
        finish(auditId, { outcome: 'not_sent', error, latencyMs });
        return FAIL(`failed: ${error}; nothing was sent`, { auditId, topics: messages.map((m) => m.topic) });
      }
      const error = `the command may have been sent, but the broker did not acknowledge it: ${(err as Error).message}`;
      finish(auditId, { outcome: 'unconfirmed', error, latencyMs });
      this.watchLate(auditId, entity, command, started, before);
      return {
        text: `unconfirmed: ${command.action.replace(/_/g, ' ')} for ${name} may have been sent (the broker connection dropped before it acknowledged the command); it may have taken effect. Check its state before trying again.`,
        details: { auditId, topics: messages.map((m) => m.topic) },
      };
    }
    const details: Record<string, unknown> = {
      auditId,
      entity: entity.id,
      command,
      published: messages,
      decision: decision.effect,
      ruleId: decision.ruleId,
    };
    if (!echo) {
      const latencyMs = performance.now() - started;
      const text = statelessText(command, name);
      finish(
        auditId,
        text.startsWith('confirmed') ? { outcome: 'confirmed', latencyMs } : { outcome: 'unconfirmed', latencyMs, error: 'the device reports no state' },
      );
      return { text, details: { ...details, latencyMs } };
    }
    const result = await echo.promise;
    const latencyMs = performance.now() - started;
    const now = this.deps.cache.get(entity.id);
    const echoPayload = result.state ? JSON.stringify({ value: result.state.value, attributes: result.state.attributes }) : null;
    Object.assign(details, { latencyMs, echo: echoPayload, timeoutMs });
    switch (result.kind) {
      case 'confirmed':
        this.answered(entity);
        finish(auditId, { outcome: 'confirmed', latencyMs, echo: echoPayload });
        return { text: `confirmed: ${stateText(entity, now, this.now())} (reported ${formatDuration(latencyMs)} after the command)`, details };
      case 'timeout': {
        const already = before && isConfirmedBy(entity, command, { ...now!, value: before.value, attributes: before.attributes });
        const silence = this.noteSilence(entity, sentAt);
        const note =
          (already ? ' It already reported that state before the command, and did not report again.' : '') +
          (silence?.afterFailover ? ` ${this.silenceWords(silence)}: it may be stuck on the broker node that went down.` : '');
        finish(auditId, {
          outcome: 'unconfirmed',
          latencyMs,
          echo: echoPayload,
          error: `no matching state within ${formatDuration(timeoutMs)}${silence?.afterFailover ? `; ${this.silenceWords(silence).replace(/^It /, 'the device ')}` : ''}`,
        });
        this.watchLate(auditId, entity, command, started, before);
        return {
          text: `unconfirmed: sent ${command.action.replace(/_/g, ' ')} to ${name}, but it did not report the new state within ${formatDuration(timeoutMs)}.${note} Last state seen: ${stateText(entity, now, this.now())}`,
          details,
        };
      }
      case 'failed': {
        const said = reportsFailure(entity, command, result.state!)!;
        finish(auditId, { outcome: 'failed', latencyMs, echo: echoPayload, error: `the device reported ${said}` });
        return FAIL(`failed: ${name} reported ${said} after the command. ${stateText(entity, now, this.now())}`, details);
      }
      // Sent, and then no report could come: what the device did is not known.
      case 'offline':
        finish(auditId, { outcome: 'unconfirmed', latencyMs, echo: echoPayload, error: 'the device reported offline after the command was sent' });
        this.watchLate(auditId, entity, command, started, before);
        return {
          text: `unconfirmed: sent ${command.action.replace(/_/g, ' ')} to ${name}, then it reported offline before confirming; it may have taken effect.`,
          details,
        };
      case 'broker_lost':
        finish(auditId, { outcome: 'unconfirmed', latencyMs, echo: echoPayload, error: 'lost the broker connection while waiting for the device' });
        this.watchLate(auditId, entity, command, started, before);
        return {
          text: `unconfirmed: sent ${command.action.replace(/_/g, ' ')} to ${name}, then lost the connection to the MQTT broker while waiting for it to confirm; it may have taken effect.`,
          details,
        };
      case 'aborted':
        // The command was sent: it may still happen; nothing is undone.
        finish(auditId, { outcome: 'interrupted', latencyMs, echo: echoPayload, error: 'cancelled while waiting for the device' });
        this.watchLate(auditId, entity, command, started, before);
        return FAIL(`cancelled while waiting for ${name} to confirm; the command had already been sent and may still take effect.`, details);
    }
  }

  /**
   * A call a stopped process left pending, now marked interrupted: if its device later reports the asked
   * state (a change to it, not the state it shows now, which may predate the call), a follow-up says so.
   * Returns whether it is watched.
   */
  reconcileInterrupted(row: AuditRow): boolean {
    const entity = row.entityId ? this.deps.registry.entity(row.entityId) : undefined;
    if (!entity) return false;
    let command: Command;
    try {
      const { entity: _drop, ...rest } = row.args;
      command = toCommand(entity, rest);
    } catch {
      return false;
    }
    const now = this.deps.cache.get(entity.id);
    // Without a state to compare, a report cannot be told from one that predates the call.
    if (!now || now.value === undefined) return false;
    // Started where the call was made, so a late confirmation says how long after the call it came.
    const started = performance.now() - Math.max(0, this.now() - Date.parse(row.at));
    this.watchLate(row.id, entity, command, started, { value: now.value, attributes: now.attributes });
    return this.lateWatches.has(entity.id);
  }

  /**
   * After `unconfirmed` (or a cancelled wait): a report that matches the command within the late window
   * appends a chained follow-up to the call ("confirmed late"). Ends at the first match, at the window's
   * end, or when a newer command is sent to the entity.
   */
  private watchLate(auditId: number, entity: Entity, command: Command, started: number, before: Pick<EntityState, 'value' | 'attributes'> | undefined): void {
    if (isStateless(entity, command)) return;
    // It already showed the asked state before the command: a report of it later proves nothing.
    const was = this.deps.cache.get(entity.id);
    if (before && was && isConfirmedBy(entity, command, { ...was, value: before.value, attributes: before.attributes })) return;
    const cache = this.deps.cache;
    const windowMs = Math.max(LATE_WINDOW_MS, 10 * (this.deps.timeouts?.[entity.kind] ?? entity.confirmTimeoutMs ?? DEFAULT_CONFIRM_TIMEOUT_MS[entity.kind]));
    const watch = {
      stop: () => {
        clearTimeout(timer);
        if (this.lateWatches.get(entity.id) !== watch) return;
        this.lateWatches.delete(entity.id);
        if (!this.lateWatches.size) cache.off('change', this.onLateReport);
      },
      report: (state: EntityState) => onReport(state),
    };
    const onReport = (state: EntityState) => {
      if (state.available === false || !isConfirmedBy(entity, command, state)) return;
      watch.stop();
      const latencyMs = performance.now() - started;
      try {
        this.deps.audit.followUp(auditId, {
          outcome: 'confirmed',
          latencyMs,
          echo: JSON.stringify({ value: state.value, attributes: state.attributes }),
          error: `confirmed late, after ${formatDuration(latencyMs)}`,
        });
      } catch (err) {
        this.deps.log.error({ err, auditId }, 'audit: a late confirmation could not be appended');
      }
    };
    const timer = setTimeout(() => watch.stop(), windowMs);
    timer.unref();
    this.lateWatches.get(entity.id)?.stop();
    if (!this.lateWatches.size) cache.on('change', this.onLateReport);
    this.lateWatches.set(entity.id, watch);
  }

  /** Calls waiting for their device's report, by entity: one cache listener and one broker listener serve them all (a scene has 50). */
  private readonly echoWaiters = new Map<string, Set<EchoWaiter>>();
  private echoCount = 0;
  private readonly onEchoChange = (state: EntityState, changed: Entity) => {
    const waiters = this.echoWaiters.get(changed.id);
    if (waiters) for (const w of [...waiters]) w.change(state);
  };
  private readonly onEchoBroker = (s: string) => {
    if (s === 'connected') return;
    for (const waiters of [...this.echoWaiters.values()]) for (const w of [...waiters]) w.broker();
  };

  private awaitEcho(entity: Entity, command: Command, timeoutMs: number, signal: AbortSignal) {
    type Outcome = { kind: 'confirmed' | 'failed' | 'timeout' | 'offline' | 'aborted' | 'broker_lost'; state?: EntityState };
    let cancel = () => {};
    const promise = new Promise<Outcome>((resolve) => {
      const cache = this.deps.cache;
      let done = false;
      const waiter: EchoWaiter = {
        change: (state: EntityState) => {
          if (state.available === false) return finish({ kind: 'offline', state });
          if (isConfirmedBy(entity, command, state)) finish({ kind: 'confirmed', state });
          else if (reportsFailure(entity, command, state)) finish({ kind: 'failed', state });
        },
        // Without the broker no echo can come: say so now rather than at the timeout.
        broker: () => finish({ kind: 'broker_lost', state: cache.get(entity.id) }),
      };
      const onAbort = () => finish({ kind: 'aborted', state: cache.get(entity.id) });
      const timer = setTimeout(() => finish({ kind: 'timeout', state: cache.get(entity.id) }), timeoutMs);
      const finish = (o: Outcome) => {
        if (done) return;
        done = true;
        // The cache updates a state in place: keep the report that decided the outcome as it was, or a second message
        // handled in the same tick (JAMMED, then UNLOCKING in one read) would change what the answer and the audit quote.
        if (o.state) o = { ...o, state: { ...o.state, attributes: { ...o.state.attributes } } };
        clearTimeout(timer);
        const set = this.echoWaiters.get(entity.id);
        set?.delete(waiter);
        if (set && !set.size) this.echoWaiters.delete(entity.id);
        if (--this.echoCount === 0) {
          cache.off('change', this.onEchoChange);
          this.deps.mqtt.off('state', this.onEchoBroker);
        }
        if (signal !== NOT_CANCELLABLE) signal.removeEventListener('abort', onAbort);
        resolve(o);
      };
      cancel = () => finish({ kind: 'aborted' });
      if (this.echoCount++ === 0) {
        cache.on('change', this.onEchoChange);
        this.deps.mqtt.on('state', this.onEchoBroker);
      }
      let set = this.echoWaiters.get(entity.id);
      if (!set) this.echoWaiters.set(entity.id, (set = new Set()));
      set.add(waiter);
      // A call no one can cancel needs no listener (adding and removing one cost ~5 us a call).
      if (signal !== NOT_CANCELLABLE) signal.addEventListener('abort', onAbort, { once: true });
    });
    return { promise, cancel: () => cancel() };
  }

  /**
   * A command went unanswered: if its device has reported no state since the command left (an availability
   * "online" is no answer), it is marked silent on every surface until it reports state, and said to be so since
   * the failover when the broker connection came back since it last answered a command (a device stuck on a node
   * that died does not come back by itself); then only an answered command ends it, however often it reconnects.
   */
  private noteSilence(entity: Entity, sentAt: number): Silence | undefined {
    const failover = this.deps.mqtt.lastReconnect;
    const answered = this.answeredAt.get(entity.deviceId);
    const reconnected = this.deps.cache.lastAnnounced(entity.deviceId);
    const heard = this.deps.cache.lastHeard(entity.deviceId);
    const afterFailover = failover !== undefined && failover.at <= sentAt;
    let silence: Silence;
    if (afterFailover && (answered === undefined || answered < failover.at)) silence = { since: failover.at, cause: 'failover', afterFailover };
    // The device moved too, after Hearth did: it answered before it reconnected, and not since.
    else if (afterFailover && reconnected !== undefined && answered !== undefined && answered < reconnected && reconnected <= sentAt)
      silence = { since: reconnected, cause: 'reconnected', afterFailover };
    else if (heard === undefined || heard < sentAt) silence = { since: sentAt, cause: 'nothing', afterFailover };
    else return undefined;
    this.deps.cache.markSilent(entity.deviceId, silence);
    return this.deps.cache.get(entity.id)?.silent ?? silence;
  }

  /** A silent device in words, after a broker failover. */
  private silenceWords(silence: Silence): string {
    const failover = this.deps.mqtt.lastReconnect;
    const what = failover?.moved === false ? 'the broker connection came back' : 'the broker failed over';
    const ago = (at: number) => `${formatDuration(this.now() - at)} ago`;
    if (silence.cause === 'failover') return `It has not answered since ${what} (${ago(silence.since)})`;
    if (silence.cause === 'reconnected') return `It has not answered since it reconnected after ${what} (${ago(silence.since)})`;
    return `It has reported nothing since the command, and ${what} ${failover ? ago(failover.at) : ''}`.trimEnd();
  }

  /** When each device last confirmed a command (epoch ms): a device that answers is not silent. */
  private readonly answeredAt = new Map<string, number>();

  private answered(entity: Entity): void {
    this.answeredAt.set(entity.deviceId, this.now());
    this.deps.cache.clearSilent(entity.deviceId);
  }

  // ---------------------------------------------------------------- audit helpers

  private entry(
    tool: GeneratedTool,
    call: ToolCall,
    args: Record<string, unknown>,
    entity: Entity | undefined,
    action: string,
    decision: PolicyDecision | undefined,
    approvedBy?: string,
  ): AuditEntry {
    return {
      requestId: call.requestId,
      principal: call.principal.id,
      session: call.session,
      runId: call.runId,
      tool: tool.name,
      entityId: entity?.id ?? null,
      action,
      args,
      decision: decision?.effect ?? 'none',
      ruleId: decision?.ruleId ?? null,
      // Where the caller spoke from is part of the record (the audit has no column of its own for it).
      reason:
        (decision?.reason ?? '') +
        (approvedBy ? ` (approved: ${approvedBy})` : '') +
        (call.principal.area ? ` [from area ${JSON.stringify(call.principal.area)}]` : ''),
    };
  }

  /** Whether the broker connection comes back within sendWaitMs (false at once when it is 0, or on cancel). */
  private brokerBack(signal: AbortSignal): Promise<boolean> {
    const waitMs = this.deps.sendWaitMs ?? 0;
    if (waitMs <= 0 || signal.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (back: boolean) => {
        clearTimeout(timer);
        this.brokerWaiters.delete(waiter);
        // One listener on the connection for every waiting call, however many wait (not one each).
        if (!this.brokerWaiters.size) this.deps.mqtt.off('state', this.onBrokerState);
        signal.removeEventListener('abort', onAbort);
        resolve(back);
      };
      const waiter = (state: string) => {
        if (state === 'connected') done(true);
        else if (state === 'closed') done(false);
      };
      const onAbort = () => done(false);
      const timer = setTimeout(() => done(false), waitMs);
      if (!this.brokerWaiters.size) this.deps.mqtt.on('state', this.onBrokerState);
      this.brokerWaiters.add(waiter);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Calls waiting for the broker to come back (brokerBack). */
  private readonly brokerWaiters = new Set<(state: string) => void>();
  private readonly onBrokerState = (state: string): void => {
    for (const waiter of [...this.brokerWaiters]) waiter(state);
  };

  /** Nothing left this process: the call is recorded `not_sent`. */
  private notSent(entry: AuditEntry, error: string): ToolResultObject {
    const id = this.safeRecord(entry, { outcome: 'not_sent', error });
    return FAIL(`failed: ${error}.`, { auditId: id });
  }

  /** A call that did not get as far as the device: denied, held for approval, or bad arguments. */
  private rejected(
    tool: GeneratedTool,
    call: ToolCall,
    args: unknown,
    entity: Entity | undefined,
    text: string,
    decision?: PolicyDecision,
    action?: string,
    approvalId?: string,
  ): ToolResultObject {
    let auditId: number | undefined;
    // Reads that fail validation are not worth a row; every refused actuation is.
    if (tool.capability === 'actuator' || decision) {
      const entry = this.entry(
        tool,
        call,
        (args && typeof args === 'object' && !Array.isArray(args) ? args : { value: args }) as Record<string, unknown>,
        entity,
        action ?? (tool.capability === 'read' ? 'read' : 'actuate'),
        decision,
      );
      if (!mayBeRetry(call) || !this.safeByRequestId(call.requestId)) {
        auditId = this.safeRecord(entry, { outcome: decision ? 'denied' : 'failed', error: text });
      }
    }
    return FAIL(text, { auditId, ...(decision ? { decision: decision.effect, ruleId: decision.ruleId } : {}), ...(approvalId ? { approvalId } : {}) });
  }

  private safeRecord(entry: AuditEntry, completion: Parameters<AuditLog['record']>[1]): number | undefined {
    try {
      return this.deps.audit.record(entry, completion);
    } catch (err) {
      this.deps.log.error({ err, requestId: entry.requestId }, 'audit row could not be written');
      return undefined;
    }
  }

  /** The command is out: its outcome is appended (off the caller's path where the store can); a failed append leaves the call pending for the next start to mark interrupted. */
  private safeFinish(id: number, completion: Parameters<AuditLog['finish']>[1]): void {
    try {
      if (this.deps.audit.finishLater) this.deps.audit.finishLater(id, completion);
      else this.deps.audit.finish(id, completion);
    } catch (err) {
      this.deps.log.error(
        { err, auditId: id },
        'audit: the outcome of a call could not be appended; it stays pending until the next start marks it interrupted',
      );
    }
  }

  /** Whether a grouped call's request id has member rows already (true when the audit cannot say). */
  private anyMemberRow(requestId: string): boolean {
    try {
      return this.deps.audit.anyRequestStartingWith?.(`${requestId}#`) ?? true;
    } catch {
      return true;
    }
  }

  private safeByRequestId(requestId: string): AuditRow | undefined {
    try {
      return this.deps.audit.byRequestId(requestId);
    } catch {
      return undefined;
    }
  }

  private fromEarlierRow(row: AuditRow, tool: GeneratedTool, args: Record<string, unknown>, call: ToolCall, entity?: Entity): ToolResultObject {
    // An idempotency key names one call: the same key with another call is a mistake (or a probe), never a retry.
    const same =
      row.tool === tool.name &&
      row.principal === call.principal.id &&
      (!entity || row.entityId === entity.id) &&
      canonicalJson(row.args) === canonicalJson(args);
    if (!same) {
      const shown = canonicalJson(row.args);
      const earlier = row.principal === call.principal.id ? ` (audit #${row.id}: ${row.tool} ${shown.length > 200 ? `${shown.slice(0, 200)}…` : shown})` : '';
      const text = `refused: request id ${row.requestId} was already used for another call${earlier}; a retry must repeat the same tool and arguments, and a new call needs a new request id. Nothing was sent.`;
      // Every refused actuator attempt has its row. The key is the earlier call's, so this row gets one of its own
      // that names it (request ids are unique per call).
      let auditId: number | undefined;
      if (tool.capability === 'actuator') {
        const action = typeof args.action === 'string' ? args.action : 'actuate';
        const own = { ...call, requestId: `${row.requestId}~reused~${randomUUID()}` };
        auditId = this.safeRecord(this.entry(tool, own, args, entity, action, undefined), { outcome: 'failed', error: text });
      }
      return FAIL(text, { duplicate: true, mismatch: true, ...(auditId ? { auditId } : {}) });
    }
    const text = `${row.outcome === 'pending' ? 'still running' : row.outcome}: request ${row.requestId} was already handled (audit #${row.id}); it was not sent again.`;
    return row.outcome === 'confirmed' || row.outcome === 'unconfirmed' || row.outcome === 'pending'
      ? { text, details: { auditId: row.id, duplicate: true } }
      : FAIL(text, { auditId: row.id, duplicate: true });
  }
}

/** What a command would send, for judging it (empty when it cannot be built: execute() says why). */
/** What a command would publish (none when it cannot be built: the call then fails as it runs). */
function messagesOf(entity: Entity, command: Command): OutgoingMessage[] {
  try {
    return encodeCommand(entity, command);
  } catch {
    return [];
  }
}

/**
 * The signal of a call nobody can cancel. One shared signal: a new
 * AbortController per call costs more than the rest of validation. Calls add
 * and remove their listeners on it, any number at once.
 */
const NOT_CANCELLABLE = new AbortController().signal;
setMaxListeners(0, NOT_CANCELLABLE);

/** A fresh call context (CLI, HTTP, tests). */
/** A refused read of an entity the caller may not read, answered as for one that does not exist (the audit keeps the refusal). */
function unknownToCaller(denied: ToolResultObject, id: string, what: 'entity' | 'camera' = 'entity'): ToolResultObject {
  return FAIL(`unknown ${what} ${quoted(id)}; use find_entities or get_state to list them`, denied.details?.auditId ? { auditId: denied.details.auditId } : {});
}

export function newCall(principal: ToolCall['principal'], toolName: string, extra: Partial<ToolCall> = {}): ToolCall {
  const call: ToolCall = { requestId: randomUUID(), toolName, runId: null, session: null, signal: NOT_CANCELLABLE, principal, ...extra };
  if (extra.requestId === undefined) generatedIds.set(call, call.requestId);
  return call;
}

/**
 * Calls whose request id Hearth drew itself (a random UUID, no caller's idempotency key): no earlier row can hold it,
 * so the look-up for a retry is skipped (a read of the log on every call). Keyed by the call object with the id
 * drawn: a copy, or a call whose id was changed, is looked up as any other.
 */
const generatedIds = new WeakMap<ToolCall, string>();

/** Whether this call's request id may be a retry of an earlier call (anything but an id Hearth drew for it). */
function mayBeRetry(call: ToolCall): boolean {
  return generatedIds.get(call) !== call.requestId;
}
