// The live tool set: regenerated when devices appear, change or vanish, and
// announced so sessions can take the new set between turns (the kit's setTools).
import { EventEmitter } from 'node:events';
import { encodeCommand } from '../devices/commands.js';
import { type HeldTo, heldTo } from '../devices/dangerous-words.js';
import type { DeviceRegistry } from '../devices/registry.js';
import type { Entity } from '../devices/model.js';
import { deviceOfEntityId } from '../devices/topic-owners.js';
import { toCommand } from './parameters.js';
import { AUDIT_TOOL, policyAnswer, principalMatches } from './records-text.js';
import type { PolicyDecision, PolicyEngine, PolicyRequest } from '../policy/types.js';
import { generateTools, toolSpecs, type GenerateOptions, type ToolShape } from './generator.js';
import { ExternalTools } from './external-tools.js';
import { newCall, type Pipeline } from './pipeline.js';
import { argumentBoundsProblem, argumentSummary } from './argument-bounds.js';
import type { AuditLog } from '../audit/types.js';
import type { GeneratedTool, Principal, ToolCall, ToolResult, ToolResultObject } from './types.js';
import { missingPermission } from '../policy/missing-permission.js';

export interface ToolSetEvents {
  changed: [tools: GeneratedTool[]];
}

export class ToolSet extends EventEmitter<ToolSetEvents> {
  private current: GeneratedTool[] = [];
  private byName = new Map<string, GeneratedTool>();
  private currentShape: ToolShape = 'per-entity';
  private signature = '';
  /** Tools declared by flows (Node-RED hearth-tool): checked, policed and audited like device tools. */
  readonly external = new ExternalTools((name) => this.isDeviceTool(name));
  private generatedNames = new Set<string>();

  constructor(
    private readonly registry: DeviceRegistry,
    private readonly pipeline: Pipeline,
    private readonly policy: PolicyEngine,
    private readonly options: GenerateOptions,
  ) {
    super();
    this.rebuild();
    registry.on('changed', () => this.rebuild());
    this.external.on('changed', () => this.rebuild());
  }

  private rebuild(): void {
    // Ranked, with the names given before: a newcomer never takes an existing tool name.
    // A flow tool's name is reserved: a device that comes later is named around it, never over it.
    const external = this.external.all();
    const moving = this.registry.movingDevices();
    // Only what agents are shown (Entity.exposed): a setting or diagnostic nobody exposed gets no tool.
    const built = generateTools(
      this.registry.exposed(),
      {
        ...this.options,
        names: this.registry.memory,
        reserved: external.map((t) => t.name),
        // A device whose move waits keeps its tool names (its sensors renamed by the move too): a newcomer named
        // like it gets suffixed ones, after a restart as well (the registry keeps their names only in this run).
        holdNames: (id) => moving.has(deviceOfEntityId(id)),
      },
      this.pipeline.invoke,
    );
    this.generatedNames = new Set(built.tools.map((t) => t.name));
    // Grouped tools (control_lights, ...) are not named per entity: one that comes to share a flow tool's name wins.
    const tools = [...built.tools, ...external.filter((t) => !this.generatedNames.has(t.name))];
    // Only announce a set that really differs (a device re-announcing itself is no change).
    const signature = JSON.stringify(toolSpecs(tools));
    this.current = tools;
    this.currentShape = built.shape;
    this.byName = new Map(tools.map((t) => [t.name, t]));
    if (signature !== this.signature) {
      const first = this.signature === '';
      this.signature = signature;
      if (!first) this.emit('changed', this.current);
    }
  }

  /**
   * Is this name a device tool's, now or remembered for an entity that is away (offline, not yet
   * rediscovered)? A flow tool may not take it: the entity gets its name back when it returns.
   */
  isDeviceTool(name: string): boolean {
    return this.generatedNames.has(name) || this.registry.memory.holderOf(name) !== undefined;
  }

  get shape(): ToolShape {
    return this.currentShape;
  }

  all(): GeneratedTool[] {
    return this.current;
  }

  get(name: string): GeneratedTool | undefined {
    return this.byName.get(name.startsWith('host__') ? name.slice(6) : name);
  }

  /**
   * The read check (ReadAccess), given by the assembly: tools for a principal name only the entities it may
   * read, so a read-denied entity is never named in an `entity` enum (get_state, get_history, cameras).
   */
  mayRead?: (principal: Principal, entity: Entity) => boolean;

  /** The tools this principal could ever use: the rest are left out of its sessions. */
  forPrincipal(principal: Principal): GeneratedTool[] {
    const flows = new Set(this.external.all());
    return this.usable(principal, flows)
      .map((t) => this.trimmedFor(principal, t))
      .filter((t): t is GeneratedTool => !!t);
  }

  /** A read tool over several entities, with those this principal may not read taken out of its schema and meta. */
  private trimmedFor(principal: Principal, t: GeneratedTool): GeneratedTool | undefined {
    if (!this.mayRead || t.capability !== 'read' || t.meta.entityIds.length < 2) return t;
    const readable = t.meta.entityIds.filter((id) => {
      const e = this.registry.entity(id);
      return !!e && this.mayRead!(principal, e);
    });
    if (readable.length === t.meta.entityIds.length) return t;
    if (!readable.length) return undefined;
    const keep = new Set(readable);
    const all = new Set(t.meta.entityIds);
    const properties = Object.fromEntries(
      Object.entries((t.parameters.properties ?? {}) as Record<string, Record<string, unknown>>).map(([name, schema]) =>
        Array.isArray(schema.enum) && schema.enum.every((v) => all.has(v as string))
          ? [name, { ...schema, enum: (schema.enum as string[]).filter((v) => keep.has(v)) }]
          : [name, schema],
      ),
    );
    return { ...t, parameters: { ...t.parameters, properties }, meta: { ...t.meta, entityIds: readable } };
  }

  private usable(principal: Principal, flows: Set<GeneratedTool>): GeneratedTool[] {
    return this.current.filter((t) => {
      // The audit is offered only to a caller who may read it (its handler checks again when called).
      if (t.name === AUDIT_TOOL && !this.policy.mayReadAudit?.(principal)) return false;
      const entities = t.meta.entityIds.map((id) => this.registry.entity(id)).filter((e) => !!e);
      return this.policy.mayEverUse(principal, t.name, {
        // A flow's tool has no entity: only rules on the tool, its capability or anything can let it through.
        entityless: flows.has(t),
        capability: t.capability,
        kinds: t.meta.kinds,
        entityIds: t.meta.entityIds,
        areas: [...new Set(entities.map((e) => e.area).filter((a): a is string => !!a))],
        actions: t.meta.actions,
        deviceClasses: [...new Set(entities.map((e) => e.deviceClass).filter((a): a is string => !!a))],
      });
    });
  }

  /**
   * What the policy would decide for this call, without running it or using
   * up a rate limit: front doors use it to ask a person only when a confirm
   * rule applies. Unknown tools and bad arguments preview as undefined.
   */
  preview(name: string, args: Record<string, unknown>, principal: Principal): PolicyDecision | undefined {
    const tool = this.get(name);
    // A grouped call stands for its members: decided as they would be.
    if (tool?.meta.group) return this.pipeline.previewGroup(tool, args, principal, (id) => this.ownToolOf(id));
    const judged = this.judgedPolicyRequest(name, args, principal);
    if (judged?.refusal) return judged.refusal;
    return judged && this.policy.preview ? this.policy.preview(judged.request) : undefined;
  }

  /** An entity's own actuator tool (not the grouped one). */
  private ownToolOf(entityId: string): string | undefined {
    return this.current.find((t) => t.capability === 'actuator' && !t.meta.group && t.meta.entityIds.includes(entityId))?.name;
  }

  /** The request the pipeline would put to the policy for this call. */
  policyRequest(name: string, args: Record<string, unknown>, principal: Principal, at?: Date): PolicyRequest | undefined {
    return this.judgedPolicyRequest(name, args, principal, at)?.request;
  }

  /**
   * The request the pipeline would put to the policy, and its refusal when the pipeline refuses the call before
   * any rule is asked (a payload too long or too deep to judge for dangerous words is never sent): a preview
   * (POST /api/policy/test, a door's ask-first) says what the call would get.
   */
  judgedPolicyRequest(
    name: string,
    args: Record<string, unknown>,
    principal: Principal,
    at?: Date,
  ): { request: PolicyRequest; refusal?: PolicyDecision } | undefined {
    const tool = this.get(name);
    if (!tool) return undefined;
    // A grouped call is judged per member when it runs; previewed, it stands for no one entity.
    const entityId = tool.meta.group ? '' : tool.meta.entityIds.length === 1 ? tool.meta.entityIds[0] : String(args.entity ?? args.camera ?? '');
    const entity = this.registry.entity(entityId);
    const IMPLIED: Record<string, string> = { number: 'set_value', select: 'select_option', button: 'press' };
    let action = tool.capability === 'read' ? 'read' : typeof args.action === 'string' ? args.action : (IMPLIED[entity?.kind ?? ''] ?? 'actuate');
    // As the tools judge it: an actuator is never a read, whatever `action` the caller sent (external-tools.ts).
    if (tool.capability !== 'read' && action === 'read') action = 'actuate';
    // As the pipeline judges it: by what the command would send (dangerous-words.ts).
    let held: { kind: string; deviceClass?: string } | undefined = entity ? { kind: entity.kind, deviceClass: entity.deviceClass } : undefined;
    let refusal: PolicyDecision | undefined;
    if (entity && tool.capability === 'actuator') {
      const { entity: _drop, ...rest } = args;
      const judged = this.judgeActuation(entity, rest);
      held = judged;
      action = judged.action ?? action;
      if (judged.unjudgeable) refusal = { effect: 'deny', ruleId: null, reason: judged.unjudgeable };
    }
    const request: PolicyRequest = {
      principal,
      tool: tool.name,
      capability: tool.capability,
      action,
      entityId: entity?.id,
      area: entity?.area,
      kind: held?.kind,
      deviceClass: held?.deviceClass,
      args,
      ...(at ? { at } : {}),
    };
    return refusal ? { request, refusal } : { request };
  }

  /**
   * How the pipeline judges an actuation of this entity with these arguments (without the `entity` one): by what
   * it would send (dangerous-words.ts): the kind, class and action it is held to, or why it cannot be judged.
   * Bad arguments judge as the entity's own kind (the pipeline refuses them when called).
   */
  judgeActuation(entity: Entity, args: Record<string, unknown>): HeldTo {
    let payloads: string[] = [];
    try {
      payloads = encodeCommand(entity, toCommand(entity, args)).map((m) => m.payload);
    } catch {
      // Bad arguments: the pipeline says so when called.
    }
    return heldTo(entity, payloads);
  }

  /**
   * explain_policy (issue 42): what the policy decides now for this action on this entity, and why, as it would
   * judge the entity's own tool. For the caller; an owner may ask for another principal (an id or its name) or
   * for every known one (`*`). `principals` lists who is known (the assembly's policy store).
   */
  explainFor(
    call: ToolCall,
    entity: Entity,
    action: string,
    forWhom: string | undefined,
    principals: { list(): Principal[]; rolesOf(id: string): string[] },
  ): ToolResultObject {
    const asker = call.principal;
    let subjects: Principal[] = [asker];
    if (forWhom !== undefined && !principalMatches(asker.id, forWhom)) {
      if (![...principals.rolesOf(asker.id), ...(asker.roles ?? [])].includes('owner'))
        return { text: 'not allowed: only an owner can ask what the policy decides for someone else', isError: true };
      const known = principals.list();
      subjects = forWhom.trim() === '*' ? known : known.filter((p) => principalMatches(p.id, forWhom));
      if (!subjects.length)
        return { text: `unknown principal ${JSON.stringify(forWhom.slice(0, 80))}; \`hearth policy principals\` lists them`, isError: true };
    }
    const own = action === 'read' ? undefined : this.ownToolOf(entity.id);
    const tool = action === 'read' ? this.current.find((t) => t.capability === 'read' && t.meta.entityIds.includes(entity.id))?.name : own;
    if (!tool) return { text: `${entity.name} (${entity.id}) has no tool for ${action.replace(/_/g, ' ')}`, isError: true };
    const decisions = subjects.slice(0, 50).map((p) => {
      const request = this.policyRequest(tool, action === 'read' ? {} : { entity: entity.id, action }, p);
      const asked = request ? { ...request, action: request.action === 'actuate' ? action : request.action } : undefined;
      const decision = asked && this.policy.preview ? this.policy.preview(asked) : undefined;
      // Asked for oneself: a refusal says what would allow it (an owner hears the command, anyone else to ask an owner).
      if (decision && asked && decision.effect === 'deny' && p.id === asker.id)
        return { principal: p.id, decision: { ...decision, reason: `${decision.reason.replace(/\.$/, '')}. ${missingPermission(asked, decision)}` } };
      return { principal: p.id, decision: decision ?? { effect: 'deny' as const, ruleId: null, reason: 'no decision could be made' } };
    });
    return policyAnswer(entity, action, decisions);
  }

  /** Run one call through the pipeline (CLI, HTTP, Node-RED device node). */
  async call(name: string, args: Record<string, unknown>, principal: Principal, extra: Partial<ToolCall> = {}): Promise<ToolResultObject> {
    const tool = this.get(name);
    if (!tool) return this.refuse(name, args, principal, extra, `unknown tool ${JSON.stringify(name.slice(0, 80))}; list them with \`hearth tools\``);
    return normalizeResult(await tool.handler(args, newCall(principal, tool.name, extra)));
  }

  /** The audit, for attempts refused before any handler (given by the assembly; refuse() records nothing without it). */
  audit?: AuditLog;

  /**
   * A call refused before it reached a tool's handler: an unknown tool, arguments that are no JSON object or do
   * not fit the tool's schema, a tool not offered to the caller. Every door refuses through here, so every door
   * records the attempt the same way: a `failed` row (as the pipeline writes for bad arguments), unless the tool
   * is a known read (a read that fails validation is not worth a row there either). Returns what the caller reads.
   */
  refuse(name: string, args: unknown, principal: Principal, extra: Partial<ToolCall>, text: string): ToolResultObject {
    const tool = this.get(name);
    const call = newCall(principal, name, extra);
    if (tool?.capability === 'read' || !this.audit) return { text, isError: true };
    const plain = !!args && typeof args === 'object' && !Array.isArray(args) && !argumentBoundsProblem(args as Record<string, unknown>);
    const stored = plain ? (args as Record<string, unknown>) : typeof args === 'string' ? { '(not JSON)': args.slice(0, 200) } : argumentSummary(args);
    const action =
      plain && typeof (args as Record<string, unknown>).action === 'string' ? String((args as Record<string, unknown>).action).slice(0, 64) : 'actuate';
    try {
      const auditId = this.audit.record(
        {
          requestId: call.requestId,
          principal: call.principal.id,
          session: call.session,
          runId: call.runId,
          tool: tool?.name ?? name.slice(0, 80),
          entityId: tool?.meta.entityIds.length === 1 ? tool.meta.entityIds[0]! : null,
          action,
          args: stored,
          decision: 'none',
          ruleId: null,
          reason: call.principal.area ? `[from area ${JSON.stringify(call.principal.area)}]` : '',
        },
        { outcome: 'failed', error: text },
      );
      return { text, isError: true, details: { auditId } };
    } catch {
      // The refusal stands whether or not its row could be written (an unwritable audit shows on every call).
      return { text, isError: true };
    }
  }
}

export function normalizeResult(result: ToolResult): ToolResultObject {
  if (typeof result === 'string') return { text: result };
  if (result.error && !result.isError) return { ...result, text: result.text ?? result.error, isError: true };
  return result;
}
