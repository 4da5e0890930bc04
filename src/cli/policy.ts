// `hearth policy ...`: the rules table (list, allow/deny/confirm, remove),
// principals' roles, and `policy test`, which explains a decision rule by rule.
import { type Command, Option } from 'commander';
import { Hearth } from '../hearth.js';
import type { Entity } from '../devices/model.js';
import { PolicyRuleError, type NewRule, type PolicyRule, type TargetType } from '../policy/rules.js';
import { ruleCommand, TARGET_FLAG } from '../policy/rule-command.js';
import type { Explanation } from '../policy/engine.js';
import type { Effect, PolicyRequest } from '../policy/types.js';
import { ArgumentError, actionsOf, toCommand } from '../tools/parameters.js';
import type { GeneratedTool } from '../tools/types.js';
import { cliPrincipal } from './principal.js';
import { configOrExit, databasePathOrExit, loggerFor, withConfigOptions, type CommonFlags } from './options.js';
import { table } from './format.js';
import type { CommandOutput } from '../daemon/protocol.js';
import { CliFailure, collect, failed, wholeNumber } from './failure.js';
import { answer } from './via-daemon.js';

export { CliFailure, wholeNumber };

// ---------------------------------------------------------------- shared CLI helpers

/** Parse JSON arguments given on the command line (an object). */
export function jsonObjectArg(name: string, raw: string | undefined): Record<string, unknown> | undefined {
  if (raw === undefined) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch (err) {
    throw new CliFailure(`${name} is not JSON: ${(err as Error).message}\n  example: '{"action":"turn_on"}'`);
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new CliFailure(`${name} must be a JSON object, e.g. '{"action":"turn_on"}'`);
  return v as Record<string, unknown>;
}

/** Run an output function on a Hearth of this command's own (no daemon for this database): rules and tools need no broker. */
async function onItsOwn(flags: CommonFlags, body: (hearth: Hearth) => Promise<CommandOutput> | CommandOutput): Promise<CommandOutput> {
  const loaded = await configOrExit(flags);
  const log = await loggerFor(loaded, flags.logLevel ?? 'warn');
  const hearth = await Hearth.open({ config: loaded.config, log, connect: false });
  try {
    return await body(hearth);
  } finally {
    await hearth.close();
  }
}

/** Ask the daemon for this database, or run on a Hearth of the command's own: the same output either way. */
async function policyCommand(
  flags: CommonFlags,
  method: string,
  params: Record<string, unknown>,
  body: (hearth: Hearth) => Promise<CommandOutput> | CommandOutput,
): Promise<void> {
  await answer(await databasePathOrExit(flags), flags, method, params, () => onItsOwn(flags, body));
}

function checkPrincipal(hearth: Hearth, id: string): void {
  try {
    cliPrincipal(hearth, id);
  } catch {
    throw new CliFailure(`principal ${JSON.stringify(id)}: a principal looks like voice:kitchen, chat:alice, flow:<node id>, mcp:<token name> or cli:<user>`);
  }
}

// ---------------------------------------------------------------- rule text

export function targetText(rule: Pick<PolicyRule, 'targetType' | 'target'>): string {
  return rule.targetType === 'any' ? 'any' : `${rule.targetType}:${rule.target}`;
}

export function whenText(rule: Pick<PolicyRule, 'window' | 'days'> & { fromArea?: string | null }): string {
  const parts: string[] = [];
  if (rule.fromArea) parts.push(`from ${rule.fromArea}`);
  if (rule.window) parts.push(`${rule.window.start}-${rule.window.end}`);
  if (rule.days) parts.push(rule.days.join(','));
  return parts.join(' ') || 'always';
}

export function rateText(rule: Pick<PolicyRule, 'maxCalls' | 'perSeconds'>): string {
  return rule.maxCalls !== null ? `${rule.maxCalls}/${rule.perSeconds}s` : '-';
}

function ruleJson(hearth: Hearth, rule: PolicyRule) {
  return { ...rule, description: hearth.policy.describe(rule) };
}

// ---------------------------------------------------------------- policy add

/** `hearth policy allow|deny|confirm` options, as sent to the daemon (no config flags). */
export interface AddParams {
  tool?: string;
  entity?: string;
  area?: string;
  kind?: string;
  deviceClass?: string;
  capability?: string;
  action: string;
  priority?: string;
  window?: string;
  days?: string;
  maxCalls?: string;
  per?: string;
  note?: string;
  fromArea?: string;
  json?: boolean;
}

type AddFlags = CommonFlags & AddParams;

/** PolicyRuleError fields -> the argument the user typed. */
function flagForField(field: string, targetFlag: string | undefined, flags: AddParams): string {
  const top = field.split('.')[0];
  const show = (flag: string, v: string | undefined) => (v === undefined ? flag : `${flag} ${JSON.stringify(v)}`);
  switch (top) {
    case 'subject':
      return '<subject>';
    case 'target':
    case 'targetType':
      return targetFlag ?? 'target';
    case 'action':
      return show('--action', flags.action);
    case 'priority':
      return show('--priority', flags.priority);
    case 'window':
      return show('--window', flags.window);
    case 'days':
      return show('--days', flags.days);
    case 'maxCalls':
      return show('--max-calls', flags.maxCalls);
    case 'perSeconds':
      return show('--per', flags.per);
    case 'note':
      return '--note';
    case 'fromArea':
      return show('--from-area', flags.fromArea);
    default:
      return field;
  }
}

/** Actions the built-in confirm rules hold back even from an `allow`. */
const CONFIRMED_ACTIONS = /(^|\|)(\*|actuate|unlock|open|set_position|disarm\*?)(\||$)/;

function addRule(hearth: Hearth, effect: Effect, subject: string, flags: AddParams): string {
  const targets = (Object.entries(TARGET_FLAG) as Array<[Exclude<TargetType, 'any'>, string]>)
    .map(([type, flag]) => ({ type, flag, value: flags[type === 'device_class' ? 'deviceClass' : type] }))
    .filter((t) => t.value !== undefined);
  if (targets.length > 1) {
    throw new CliFailure(`give at most one target: ${targets.map((t) => t.flag).join(' and ')} were both given (no target option = any tool)`);
  }
  const target = targets[0];
  for (const alt of subject.split('|').map((a) => a.trim())) {
    // Principal ids always have a prefix (chat:, voice:, ...): a bare word would never match.
    if (alt && !alt.includes(':') && !/[*?]/.test(alt)) {
      throw new CliFailure(
        `<subject> ${JSON.stringify(alt)}: names no principal; principals look like chat:${alt} or voice:${alt}, a role is role:${alt}, and * is anyone`,
      );
    }
  }
  const input: NewRule = {
    subject,
    targetType: target?.type ?? 'any',
    ...(target ? { target: target.value } : {}),
    action: flags.action,
    effect,
    ...(flags.priority !== undefined ? { priority: wholeNumber('--priority', flags.priority, { min: -1_000_000, max: 1_000_000 }) } : {}),
    ...(flags.window !== undefined ? { window: flags.window } : {}),
    ...(flags.days !== undefined ? { days: flags.days } : {}),
    ...(flags.maxCalls !== undefined ? { maxCalls: wholeNumber('--max-calls', flags.maxCalls, { min: 1 }) } : {}),
    ...(flags.per !== undefined ? { perSeconds: wholeNumber('--per', flags.per, { min: 1 }) } : {}),
    ...(flags.note !== undefined ? { note: flags.note } : {}),
    ...(flags.fromArea !== undefined ? { fromArea: flags.fromArea } : {}),
  };
  let rule: PolicyRule;
  try {
    rule = hearth.policy.add(input);
  } catch (err) {
    if (err instanceof PolicyRuleError) throw new CliFailure(`${flagForField(err.field, target?.flag, flags)}: ${err.message}`);
    throw err;
  }
  if (flags.json) return `${JSON.stringify(ruleJson(hearth, rule), null, 2)}\n`;
  const lines = [`added rule #${rule.id}: ${hearth.policy.describe(rule)}${rule.note ? ` (${rule.note})` : ''}`];
  lines.push(
    `  ${targetText(rule)}, action ${rule.action}, ${rule.effect}, priority ${rule.priority}, ${whenText(rule)}${rule.maxCalls !== null ? `, ${rateText(rule)}` : ''}`,
  );
  const builtinConfirm = hearth.policy.list().filter((r) => r.builtin && r.effect === 'confirm');
  if (effect === 'allow' && rule.priority <= 100 && builtinConfirm.length && CONFIRMED_ACTIONS.test(rule.action)) {
    const top = Math.max(...builtinConfirm.map((r) => r.priority));
    if (rule.priority <= top) {
      lines.push(
        `  note: the built-in confirm rules (priority ${top}: unlocking, opening garage doors/doors/gates, disarming) still ask a person first; --priority ${top + 1} overrides them`,
      );
    }
  }
  lines.push(`  undo: hearth policy remove ${rule.id}`);
  return `${lines.join('\n')}\n`;
}

// ---------------------------------------------------------------- policy test

interface TestRequest {
  request: PolicyRequest;
  entity?: Entity;
  notes: string[];
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
        throw new CliFailure(
          `args.${a.entity !== undefined ? 'entity' : 'camera'} ${JSON.stringify(id)}: not an entity ${tool.name} serves; it serves ${tool.meta.entityIds.slice(0, 20).join(', ')}${tool.meta.entityIds.length > 20 ? ', ...' : ''}`,
        );
      }
      entity = registry.entity(id);
    } else if (tool.capability === 'actuator') {
      throw new CliFailure(
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
          throw new CliFailure(`args: ${err.message}`);
        }
      }
    }
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
          kind: entity.kind,
          ...(entity.deviceClass ? { deviceClass: entity.deviceClass } : {}),
        }
      : {}),
    args: a,
  };
  return { request, entity, notes };
}

function explanationText(ex: Explanation, req: PolicyRequest, notes: string[], at: Date | undefined): string {
  const d = ex.decision;
  const what = req.capability === 'read' ? 'read' : req.action;
  const on = req.entityId
    ? ` on ${req.entityId} (kind ${req.kind ?? '-'}${req.area ? `, area ${req.area}` : ''}${req.deviceClass ? `, device class ${req.deviceClass}` : ''})`
    : '';
  const decidedRule = ex.rules.find((r) => r.decided);
  const lines = [
    `${d.effect}: ${req.principal.id} calling ${req.tool}, action ${what}${on}`,
    `  decided by  ${decidedRule ? `rule #${decidedRule.rule.id}: ${decidedRule.description}${decidedRule.rule.builtin ? ' (built-in)' : ''}` : 'the default (no rule matched)'}`,
    `  reason      ${d.reason}`,
    `  roles       ${ex.roles.join(', ') || 'none'}`,
    ...(at ? [`  at          ${at.toString()}`] : []),
    ...notes.map((n) => `  note        ${n}`),
    '',
    'Rules in evaluation order (priority, then deny > confirm > allow, then id):',
  ];
  const rows = [['', 'RULE', 'EFFECT', 'PRIO', 'RULE TEXT', 'WHY']];
  for (const c of ex.rules) {
    rows.push([c.decided ? '=>' : c.matched ? '+' : '', `#${c.rule.id}`, c.rule.effect, String(c.rule.priority), c.description, c.why]);
  }
  return `${lines.join('\n')}\n${table(rows)}\n  (=> decided; + matched but lost to the deciding rule, WHY says how)\n`;
}

function parseAt(raw: string): Date {
  const d = new Date(raw);
  if (Number.isNaN(d.getTime())) throw new CliFailure(`--at ${JSON.stringify(raw)}: not a time; use e.g. 2025-06-01T23:30 (local time)`);
  return d;
}

// ---------------------------------------------------------------- registering

export function registerPolicy(program: Command): void {
  const policy = program
    .command('policy')
    .description('the policy table: who may do what to which devices, when and how often (list, allow, deny, confirm, remove, test, roles)');

  withConfigOptions(policy.command('list', { isDefault: true }))
    .description('list the rules (built-in defaults included); what `hearth policy` alone does')
    .option('--json', 'print the rules as JSON (with a one-line description each)')
    .action((flags: CommonFlags & { json?: boolean }) =>
      policyCommand(flags, 'policy.list', { json: flags.json }, (hearth) => policyListOutput(hearth, { json: flags.json })),
    );

  const EFFECT_HELP: Record<Effect, string> = {
    allow: 'add a rule that allows calls (the subject may ...)',
    deny: 'add a rule that denies calls (the subject may not ...)',
    confirm: 'add a rule that holds calls until a person approves them (hearth approvals / hearth approve <id>)',
  };
  for (const effect of ['allow', 'deny', 'confirm'] as const) {
    withConfigOptions(policy.command(effect))
      .description(EFFECT_HELP[effect])
      .argument('<subject>', "who: a principal or glob (chat:alice, voice:*), a role (role:owner), '*' for anyone; '|' separates alternatives")
      .option('--tool <pattern>', 'target: tools by name (glob, e.g. garage_door, *_light)')
      .option('--entity <pattern>', 'target: entities by id (glob, e.g. front_door.lock, garage_door.*)')
      .option('--area <name>', 'target: entities in an area (e.g. Kitchen; case-insensitive)')
      .option('--kind <kind>', 'target: entities of a kind (light, switch, cover, lock, climate, sensor, camera, ...)')
      .option('--device-class <class>', 'target: entities of a device class (garage, door, gate, ...)')
      .addOption(new Option('--capability <capability>', 'target: every tool of a capability').choices(['read', 'actuator']))
      .option(
        '--action <action>',
        "which calls: read, actuate (any command), a command (turn_on, unlock, open, set_temperature, ...), a glob (arm_*), '|' for several, or * for reads and every command",
        '*',
      )
      .option('--priority <n>', 'higher wins; at equal priority deny > confirm > allow (default 0; the built-in confirm rules sit at 100)')
      .option('--window <HH:MM-HH:MM>', 'only between these local times (a window may wrap midnight: 22:00-06:00)')
      .option('--days <days>', 'only on these days: mon,tue or mon-fri')
      .option('--max-calls <n>', 'rate limit: at most n calls ... (with --per; allow and confirm rules)')
      .option('--per <seconds>', '... per this many seconds, per principal')
      .option('--note <text>', 'why the rule is there (shown in decisions and the audit log)')
      .option('--from-area <area>', "only calls made from this area: the caller's (a satellite's or a token's --area), not the device's (e.g. Hallway)")
      .option('--json', 'print the new rule as JSON')
      .addHelpText(
        'after',
        `
One target option at most; with none the rule covers every tool. The default
--action is *: reads and every command, so
  hearth policy allow role:owner --kind light
means "owners may read and operate the lights", and
  hearth policy deny chat:kid --area Garage --window 21:00-07:00
means "the kid may not touch anything in the garage at night", and
  hearth policy allow 'voice:*' --device-class garage --action open --priority 101 --from-area Hallway
means "the garage opens by voice only from the hallway satellite".
Give --action actuate (all commands) or --action read to narrow it.`,
      )
      .action((subject: string, flags: AddFlags) => {
        const params = addParams(flags);
        return policyCommand(flags, 'policy.add', { effect, subject, ...params }, (hearth) => policyAddOutput(hearth, effect, subject, params));
      });
  }

  withConfigOptions(policy.command('remove'))
    .alias('rm')
    .description('remove a rule by id (built-in rules too: they do not come back by themselves)')
    .argument('<id>', 'rule id, as `hearth policy list` shows it')
    .action((rawId: string, flags: CommonFlags) => policyCommand(flags, 'policy.remove', { id: rawId }, (hearth) => policyRemoveOutput(hearth, { id: rawId })));

  withConfigOptions(policy.command('test'))
    .description('explain what the policy decides for one call: the decision, the deciding rule, and why every rule matched or not')
    .argument('<principal>', 'who calls: chat:alice, voice:kitchen, cli:<user>, ...')
    .argument('<tool>', 'tool name, as `hearth tools` lists it')
    .argument('[args]', `the call's arguments as JSON: the action comes from them ('{"action":"unlock"}'); for grouped tools also the entity`)
    .option(
      '--role <role>',
      'a role the principal has for this test, besides its stored ones; repeat for more (default: stored roles; cli:<you> gets owner as with `hearth call`)',
      collect,
    )
    .option('--at <time>', 'decide as at this local time (for time windows), e.g. 2025-06-01T23:30')
    .option('--from-area <area>', "the area the call comes from (a satellite's or a token's), for --from-area rules")
    .option('--json', 'print the explanation as JSON')
    .action(
      async (
        principalId: string,
        toolName: string,
        rawArgs: string | undefined,
        flags: CommonFlags & { role?: string[]; at?: string; fromArea?: string; json?: boolean },
      ) => {
        const params: PolicyTestParams = {
          principal: principalId,
          tool: toolName,
          args: rawArgs,
          role: flags.role,
          at: flags.at,
          fromArea: flags.fromArea,
          json: flags.json,
        };
        await answer(await databasePathOrExit(flags), flags, 'policy.test', { ...params }, async () => {
          const loaded = await configOrExit(flags);
          const log = await loggerFor(loaded, flags.logLevel ?? 'warn');
          const hearth = await Hearth.open({ config: loaded.config, log, connect: false });
          try {
            return await policyTestOutput(hearth, params);
          } finally {
            await hearth.close();
          }
        });
      },
    );

  withConfigOptions(policy.command('roles'))
    .description("show or set a principal's roles (rules can name roles: role:owner); without a principal: every principal with stored roles")
    .argument('[principal]', 'chat:alice, voice:kitchen, ...')
    .argument('[roles...]', 'the roles to set (replaces the stored ones)')
    .option('--clear', 'remove every stored role of the principal')
    .action((principalId: string | undefined, roles: string[], flags: CommonFlags & { clear?: boolean }) => {
      const params: RolesParams = { principal: principalId, roles, clear: flags.clear };
      return policyCommand(flags, 'policy.roles', { ...params }, (hearth) => policyRolesOutput(hearth, params));
    });
}

// ---------------------------------------------------------------- outputs (the daemon runs these too)

const ADD_KEYS = [
  'tool',
  'entity',
  'area',
  'kind',
  'deviceClass',
  'capability',
  'action',
  'priority',
  'window',
  'days',
  'maxCalls',
  'per',
  'note',
  'fromArea',
  'json',
] as const;

/** The add options without the config flags: what the daemon gets. */
function addParams(flags: AddFlags): AddParams {
  const out: Record<string, unknown> = {};
  for (const k of ADD_KEYS) if (flags[k] !== undefined) out[k] = flags[k];
  return out as unknown as AddParams;
}

/** What `hearth policy list` prints. */
export function policyListOutput(hearth: Hearth, p: { json?: boolean }): CommandOutput {
  const rules = hearth.policy.list();
  if (p.json)
    return {
      stdout: `${JSON.stringify(
        rules.map((r) => ruleJson(hearth, r)),
        null,
        2,
      )}\n`,
    };
  const rows = [['ID', 'SUBJECT', 'TARGET', 'ACTION', 'EFFECT', 'PRIO', 'WHEN', 'RATE', 'BUILTIN', 'NOTE']];
  for (const r of rules) {
    rows.push([String(r.id), r.subject, targetText(r), r.action, r.effect, String(r.priority), whenText(r), rateText(r), r.builtin ? 'yes' : '', r.note ?? '']);
  }
  return {
    stdout:
      `${rules.length} rules. Among the rules that match a call the highest priority wins; at equal priority deny > confirm > allow.\n` +
      `With no match reads are allowed and actuators denied. Explain a decision: hearth policy test <principal> <tool> [args]\n\n${table(rows)}\n`,
  };
}

/** What `hearth policy allow|deny|confirm` prints. */
export function policyAddOutput(hearth: Hearth, effect: Effect, subject: string, p: AddParams): CommandOutput {
  try {
    return { stdout: addRule(hearth, effect, subject, p) };
  } catch (err) {
    return failed(err);
  }
}

/** What `hearth policy remove` prints. */
export function policyRemoveOutput(hearth: Hearth, p: { id: string }): CommandOutput {
  try {
    const id = wholeNumber('<id>', p.id, { min: 1 });
    const result = hearth.policy.remove(id);
    if (!result.removed || !result.rule) throw new CliFailure(`no rule #${id}; see hearth policy list`, 1);
    const r = result.rule;
    const lines = [`removed ${r.builtin ? 'built-in ' : ''}rule #${r.id}: ${hearth.policy.describe(r)}${r.note ? ` (${r.note})` : ''}`];
    if (r.builtin) lines.push(`  it was a built-in default and will not come back by itself; to restore it:\n  ${ruleCommand(r)}`);
    else lines.push(`  to add it again: ${ruleCommand(r)}`);
    return { stdout: `${lines.join('\n')}\n` };
  } catch (err) {
    return failed(err);
  }
}

export interface RolesParams {
  principal?: string;
  roles?: string[];
  clear?: boolean;
}

/** What `hearth policy roles` prints. */
export function policyRolesOutput(hearth: Hearth, p: RolesParams): CommandOutput {
  try {
    return { stdout: rolesText(hearth, p) };
  } catch (err) {
    return failed(err);
  }
}

function rolesText(hearth: Hearth, p: RolesParams): string {
  const roles = p.roles ?? [];
  if (p.principal === undefined) {
    const all = hearth.policy.listPrincipals();
    if (!all.length) return 'no principal has stored roles; set some with: hearth policy roles chat:alice owner\n';
    const rows = [['PRINCIPAL', 'ROLES']];
    for (const x of all) rows.push([x.id, x.roles.join(', ') || '-']);
    return `${table(rows)}\n`;
  }
  checkPrincipal(hearth, p.principal);
  if (p.clear && roles.length) throw new CliFailure('--clear and roles: give one or the other');
  if (p.clear) {
    hearth.policy.removePrincipal(p.principal);
    return `${p.principal}: roles cleared\n`;
  }
  if (roles.length) {
    try {
      hearth.policy.setRoles(p.principal, roles);
    } catch (err) {
      if (err instanceof PolicyRuleError) throw new CliFailure(`[roles...]: ${err.message}`);
      throw err;
    }
  }
  const now = hearth.policy.rolesOf(p.principal);
  return `${p.principal}: ${now.length ? `roles ${now.join(', ')}` : 'no stored roles'}${roles.length ? ' (set)' : ''}\n`;
}

export interface PolicyTestParams {
  principal: string;
  tool: string;
  /** The call's arguments as JSON text, as typed. */
  args?: string;
  role?: string[];
  at?: string;
  /** The area the call comes from (a satellite's, a token's), for rules with --from-area. */
  fromArea?: string;
  json?: boolean;
}

/** What `hearth policy test` prints, from a Hearth (the daemon's or the command's own). */
export async function policyTestOutput(hearth: Hearth, p: PolicyTestParams): Promise<CommandOutput> {
  try {
    return { stdout: explain(hearth, p) };
  } catch (err) {
    return failed(err);
  }
}

function explain(hearth: Hearth, p: PolicyTestParams): string {
  checkPrincipal(hearth, p.principal);
  const args = jsonObjectArg('[args]', p.args);
  const tool = hearth.tools.get(p.tool);
  if (!tool)
    throw new CliFailure(
      `no tool ${JSON.stringify(p.tool)}; known: ${hearth.tools
        .all()
        .map((t) => t.name)
        .join(', ')}`,
    );
  const at = p.at !== undefined ? parseAt(p.at) : undefined;
  // As `hearth call` does: the person at this terminal is an owner unless roles are given.
  const me = cliPrincipal(hearth).id;
  const roles = p.role ?? (p.principal === me ? ['owner'] : []);
  const { request, notes } = requestFor(hearth, tool, args, { id: p.principal, roles, ...(p.fromArea ? { area: p.fromArea } : {}) });
  if (p.principal === me && !p.role) notes.push(`${me} is you: \`hearth call\` without --as gives you the role owner`);
  if (at) request.at = at;
  const ex = hearth.policy.explain(request);
  if (p.json) {
    const { args: _a, principal, ...rest } = request;
    return `${JSON.stringify(
      {
        request: { ...rest, principal: principal.id, args: args ?? {}, at: (at ?? new Date()).toISOString() },
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
      },
      null,
      2,
    )}\n`;
  }
  return explanationText(ex, request, notes, at);
}
