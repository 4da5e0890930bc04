// `policy.*`: the rules table, principals' roles, and `policy.test`, which explains a decision rule by rule.
import type { Entity } from '../../devices/model.js';
import type { Hearth } from '../../hearth.js';
import { ruleCommand, TARGET_FLAG } from '../../policy/rule-command.js';
import { PolicyRuleError, type NewRule, type PolicyRule, type TargetType } from '../../policy/rules.js';
import type { PolicyRequest } from '../../policy/types.js';
import { ArgumentError, actionsOf, toCommand } from '../../tools/parameters.js';
import type { GeneratedTool } from '../../tools/types.js';
import { callerPrincipal, localUser } from '../caller.js';
import { badParams, notFound } from '../protocol.js';
import type { AddRuleParams, PolicyTestAnswer, PolicyTestParams, PrincipalRoles, RuleAdded, RuleJson, RuleRemoved } from '../schema.js';

const ruleJson = (hearth: Hearth, rule: PolicyRule): RuleJson => ({ ...rule, description: hearth.policy.describe(rule) });

export function listRules(hearth: Hearth): RuleJson[] {
  return hearth.policy.list().map((r) => ruleJson(hearth, r));
}

/** The target params, by the rule's target type. */
const TARGET_PARAM: Record<Exclude<TargetType, 'any'>, keyof AddRuleParams> = {
  tool: 'tool',
  entity: 'entity',
  area: 'area',
  kind: 'kind',
  device_class: 'deviceClass',
  capability: 'capability',
};

/** A PolicyRuleError's field -> the param that carried it. */
function paramForField(field: string, target: string | undefined): string {
  const top = field.split('.')[0];
  if (top === 'target' || top === 'targetType') return target ?? 'target';
  if (top === 'perSeconds') return 'per';
  return top;
}

/** Actions the built-in confirm rules hold back even from an `allow`. */
const CONFIRMED_ACTIONS = /(^|\|)(\*|actuate|unlock|open|set_position|disarm\*?)(\||$)/;

export function addRule(hearth: Hearth, p: AddRuleParams): RuleAdded {
  const targets = (Object.keys(TARGET_PARAM) as Array<Exclude<TargetType, 'any'>>)
    .map((type) => ({ type, param: TARGET_PARAM[type], value: p[TARGET_PARAM[type]] as string | undefined }))
    .filter((t) => t.value !== undefined);
  if (targets.length > 1) {
    throw badParams(`give at most one target: ${targets.map((t) => TARGET_FLAG[t.type]).join(' and ')} were both given (no target = any tool)`);
  }
  const target = targets[0];
  for (const alt of p.subject.split('|').map((a) => a.trim())) {
    // Principal ids always have a prefix (chat:, voice:, ...): a bare word would never match.
    if (alt && !alt.includes(':') && !/[*?]/.test(alt)) {
      throw badParams(
        `subject ${JSON.stringify(alt)}: names no principal; principals look like chat:${alt} or voice:${alt}, a role is role:${alt}, and * is anyone`,
      );
    }
  }
  const input: NewRule = {
    subject: p.subject,
    targetType: target?.type ?? 'any',
    ...(target ? { target: target.value } : {}),
    action: p.action,
    effect: p.effect,
    ...(p.priority !== undefined ? { priority: p.priority } : {}),
    ...(p.window !== undefined ? { window: p.window } : {}),
    ...(p.days !== undefined ? { days: p.days } : {}),
    ...(p.maxCalls !== undefined ? { maxCalls: p.maxCalls } : {}),
    ...(p.per !== undefined ? { perSeconds: p.per } : {}),
    ...(p.note !== undefined ? { note: p.note } : {}),
    ...(p.fromArea !== undefined ? { fromArea: p.fromArea } : {}),
  };
  let rule: PolicyRule;
  try {
    rule = hearth.policy.add(input);
  } catch (err) {
    if (!(err instanceof PolicyRuleError)) throw err;
    const param = paramForField(err.field, target?.param);
    const value = (p as unknown as Record<string, unknown>)[param];
    throw badParams(`${param}${value !== undefined && param !== 'subject' ? ` ${JSON.stringify(String(value))}` : ''}: ${err.message}`);
  }
  const notes: string[] = [];
  const builtinConfirm = hearth.policy.list().filter((r) => r.builtin && r.effect === 'confirm');
  if (p.effect === 'allow' && rule.priority <= 100 && builtinConfirm.length && CONFIRMED_ACTIONS.test(rule.action)) {
    const top = Math.max(...builtinConfirm.map((r) => r.priority));
    if (rule.priority <= top) {
      notes.push(
        `the built-in confirm rules (priority ${top}: unlocking, opening garage doors/doors/gates, disarming) still ask a person first; --priority ${top + 1} overrides them`,
      );
    }
  }
  return { rule: ruleJson(hearth, rule), notes, undo: `hearth policy remove ${rule.id}` };
}

export function removeRule(hearth: Hearth, p: { id: number }): RuleRemoved {
  const result = hearth.policy.remove(p.id);
  if (!result.removed || !result.rule) throw notFound(`no rule #${p.id}; see hearth policy list`);
  return { rule: ruleJson(hearth, result.rule), restore: ruleCommand(result.rule) };
}

function checkPrincipal(id: string): void {
  callerPrincipal(() => [], id);
}

export function roles(hearth: Hearth, p: { principal?: string; roles?: string[]; clear?: boolean }): PrincipalRoles[] {
  const given = p.roles ?? [];
  if (p.principal === undefined) return hearth.policy.listPrincipals().map((x) => ({ principal: x.id, roles: x.roles }));
  checkPrincipal(p.principal);
  if (p.clear && given.length) throw badParams('clear and roles: give one or the other');
  if (p.clear) {
    hearth.policy.removePrincipal(p.principal);
    return [{ principal: p.principal, roles: [], changed: 'cleared' }];
  }
  if (given.length) {
    try {
      hearth.policy.setRoles(p.principal, given);
    } catch (err) {
      if (err instanceof PolicyRuleError) throw badParams(`roles: ${err.message}`);
      throw err;
    }
  }
  return [{ principal: p.principal, roles: hearth.policy.rolesOf(p.principal), ...(given.length ? { changed: 'set' as const } : {}) }];
}

interface TestRequest {
  request: PolicyRequest;
  entity?: Entity;
  notes: string[];
  /** Why the pipeline would refuse the call before any rule (a payload it cannot judge). */
  refusal?: string;
}

/** Turn a tool and its arguments into the request the handler pipeline would put to the policy. */
export function requestFor(
  hearth: Hearth,
  tool: GeneratedTool,
  args: Record<string, unknown> | undefined,
  principal: { id: string; roles: string[]; area?: string },
): TestRequest {
  const registry = hearth.bridge.registry;
  const notes: string[] = [];
  const a = args ?? {};
  let entity: Entity | undefined;
  // Per-entity tools stand for one entity; grouped ones (and get_state) take it as an argument.
  const props = (tool.parameters.properties ?? {}) as Record<string, unknown>;
  const takesEntity = 'entity' in props || 'camera' in props || tool.meta.entityIds.length !== 1;
  if (tool.meta.group) {
    notes.push(`${tool.name} is judged per member entity when it runs; this tests the call as a whole (no one entity)`);
  } else if (!takesEntity) {
    entity = registry.entity(tool.meta.entityIds[0]);
  } else {
    const id = a.entity ?? a.camera;
    if (id !== undefined) {
      if (typeof id !== 'string' || !tool.meta.entityIds.includes(id)) {
        throw badParams(
          `args.${a.entity !== undefined ? 'entity' : 'camera'} ${JSON.stringify(id)}: not an entity ${tool.name} serves; it serves ${tool.meta.entityIds.slice(0, 20).join(', ')}${tool.meta.entityIds.length > 20 ? ', ...' : ''}`,
        );
      }
      entity = registry.entity(id);
    } else if (tool.capability === 'actuator') {
      throw badParams(
        `${tool.name} takes the entity as an argument: say which in the args, e.g. '{"entity":"${tool.meta.entityIds[0] ?? 'some.entity'}","action":"${tool.meta.actions[0] ?? 'turn_on'}"}'`,
      );
    } else {
      notes.push(`${tool.name} without an entity: the pipeline checks each entity it reads on its own; give '{"entity":"<id>"}' to test one`);
    }
  }

  let action = 'read';
  // A grouped call is tested with the action it asks (each member is judged again when it runs).
  if (tool.meta.group) action = typeof a.action === 'string' ? a.action : (tool.meta.actions[0] ?? 'actuate');
  if (tool.capability === 'actuator' && entity) {
    const offered = actionsOf(entity);
    const { entity: _e, ...rest } = a;
    if (!Object.keys(rest).length) {
      action = offered[0] ?? 'actuate';
      notes.push(
        `no arguments given: testing ${tool.name}'s first action, ${action} (of ${offered.join(', ')}); pass e.g. '{"action":"${offered[offered.length - 1] ?? action}"}' for another`,
      );
    } else {
      try {
        action = toCommand(entity, rest).action;
      } catch (err) {
        if (!(err instanceof ArgumentError)) throw err;
        // The policy only looks at the action: test it, but say the call itself would be refused.
        if (typeof rest.action === 'string' && offered.includes(rest.action)) {
          action = rest.action;
          notes.push(`the call itself would be refused before the policy (${err.message}); testing action ${action}`);
        } else {
          throw badParams(`args: ${err.message}`);
        }
      }
    }
  }
  // As the pipeline judges it: by what the command would send (a "light" whose payload is UNLOCK is held to the
  // rules for locks), and refused before any rule when that cannot be judged.
  let held: { kind?: string; deviceClass?: string } = entity ? { kind: entity.kind, deviceClass: entity.deviceClass } : {};
  let refusal: string | undefined;
  if (tool.capability === 'actuator' && entity) {
    const { entity: _e, ...rest } = a;
    const judged = hearth.tools.judgeActuation(entity, Object.keys(rest).length ? rest : { action });
    held = judged;
    if (judged.action && judged.action !== action) {
      notes.push(`what ${tool.name} would send says ${judged.word}: judged as ${judged.action} on a ${judged.kind}, not ${action}`);
      action = judged.action;
    } else if (judged.kind !== entity.kind) notes.push(`its payloads say ${judged.word}: held to the rules for a ${judged.kind}`);
    if (judged.unjudgeable) refusal = judged.unjudgeable;
  }
  const request: PolicyRequest = {
    principal,
    tool: tool.name,
    capability: tool.capability,
    action,
    ...(entity
      ? {
          entityId: entity.id,
          ...(entity.area ? { area: entity.area } : {}),
          ...(held.kind ? { kind: held.kind } : {}),
          ...(held.deviceClass ? { deviceClass: held.deviceClass } : {}),
        }
      : {}),
    args: a,
  };
  return { request, entity, notes, ...(refusal ? { refusal } : {}) };
}

export function testPolicy(hearth: Hearth, p: PolicyTestParams): PolicyTestAnswer {
  checkPrincipal(p.principal);
  const tool = hearth.tools.get(p.tool);
  if (!tool)
    throw badParams(
      `no tool ${JSON.stringify(p.tool)}; known: ${hearth.tools
        .all()
        .map((t) => t.name)
        .join(', ')}`,
    );
  const at = p.at !== undefined ? new Date(p.at) : undefined;
  // As `hearth call` does: the person at this machine is an owner unless roles are given.
  const me = localUser();
  const roleList = p.role ?? (p.principal === me ? ['owner'] : []);
  const { request, notes, refusal } = requestFor(hearth, tool, p.args, { id: p.principal, roles: roleList, ...(p.fromArea ? { area: p.fromArea } : {}) });
  if (p.principal === me && !p.role) notes.push(`${me} is you: \`hearth call\` without --as gives you the role owner`);
  if (at) request.at = at;
  const ex = hearth.policy.explain(request);
  // Refused before any rule (what it would send cannot be judged): the call gets that, whatever the rules say.
  if (refusal) ex.decision = { effect: 'deny', ruleId: null, reason: refusal };
  const { args: _a, principal, at: _at, ...rest } = request;
  return {
    request: { ...rest, principal: principal.id, args: p.args ?? {}, at: (at ?? new Date()).toISOString(), atGiven: !!at },
    decision: ex.decision,
    roles: ex.roles,
    notes,
    rules: ex.rules.map((c) => ({
      id: c.rule.id,
      effect: c.rule.effect,
      priority: c.rule.priority,
      builtin: c.rule.builtin,
      description: c.description,
      matched: c.matched,
      decided: c.decided,
      why: c.why,
    })),
  };
}
