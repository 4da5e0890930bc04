// `hearth policy ...`: the rules table (list, allow/deny/confirm, remove),
// principals' roles, and `policy test`, which explains a decision rule by rule.
// The daemon answers each with data (src/daemon/methods/policy.ts); this file turns the answers into text.
import { type Command, Option } from 'commander';
import type { PolicyRule } from '../policy/rules.js';
import type { Effect } from '../policy/types.js';
import type { PolicyTestAnswer } from '../daemon/schema.js';
import { withConfigOptions, type CommonFlags } from './options.js';
import { hearthCommand } from './command-name.js';
import { table } from './format.js';
import { CliFailure, collect, wholeNumber } from './failure.js';
import { askHearth, printJson } from './via-daemon.js';

export { CliFailure, wholeNumber };

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

/** `hearth policy allow|deny|confirm` options. */
interface AddFlags extends CommonFlags {
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

function explanationText(a: PolicyTestAnswer): string {
  const d = a.decision;
  const req = a.request;
  const what = req.capability === 'read' ? 'read' : req.action;
  const on = req.entityId
    ? ` on ${req.entityId} (kind ${req.kind ?? '-'}${req.area ? `, area ${req.area}` : ''}${req.deviceClass ? `, device class ${req.deviceClass}` : ''})`
    : '';
  const decided = a.rules.find((r) => r.decided);
  const lines = [
    `${d.effect}: ${req.principal} calling ${req.tool}, action ${what}${on}`,
    `  decided by  ${decided ? `rule #${decided.id}: ${decided.description}${decided.builtin ? ' (built-in)' : ''}` : 'the default (no rule matched)'}`,
    `  reason      ${d.reason}`,
    `  roles       ${a.roles.join(', ') || 'none'}`,
    ...(req.atGiven ? [`  at          ${new Date(req.at).toString()}`] : []),
    ...a.notes.map((n) => `  note        ${n}`),
    '',
    'Rules in evaluation order (priority, then deny > confirm > allow, then id):',
  ];
  const rows = [['', 'RULE', 'EFFECT', 'PRIO', 'RULE TEXT', 'WHY']];
  for (const c of a.rules) rows.push([c.decided ? '=>' : c.matched ? '+' : '', `#${c.id}`, c.effect, String(c.priority), c.description, c.why]);
  return `${lines.join('\n')}\n${table(rows)}\n  (=> decided; + matched but lost to the deciding rule, WHY says how)\n`;
}

function parseAt(raw: string): string {
  const d = new Date(raw);
  if (Number.isNaN(d.getTime())) throw new CliFailure(`--at ${JSON.stringify(raw)}: not a time; use e.g. 2025-06-01T23:30 (local time)`);
  return d.toISOString();
}

// ---------------------------------------------------------------- registering

export function registerPolicy(program: Command): void {
  const policy = program
    .command('policy')
    .description('the policy table: who may do what to which devices, when and how often (list, allow, deny, confirm, remove, test, roles)');

  withConfigOptions(policy.command('list', { isDefault: true }))
    .description('list the rules (built-in defaults included); what `hearth policy` alone does')
    .option('--json', 'print the rules as JSON (with a one-line description each)')
    .action(async (flags: CommonFlags & { json?: boolean }) => {
      const { listRules } = await import('../daemon/methods/policy.js');
      const rules = await askHearth(flags, 'policy.list', {}, listRules);
      if (flags.json) return printJson(rules);
      const rows = [['ID', 'SUBJECT', 'TARGET', 'ACTION', 'EFFECT', 'PRIO', 'WHEN', 'RATE', 'BUILTIN', 'NOTE']];
      for (const r of rules) {
        rows.push([
          String(r.id),
          r.subject,
          targetText(r),
          r.action,
          r.effect,
          String(r.priority),
          whenText(r),
          rateText(r),
          r.builtin ? 'yes' : '',
          r.note ?? '',
        ]);
      }
      process.stdout.write(
        `${rules.length} rules. Among the rules that match a call the highest priority wins; at equal priority deny > confirm > allow.\n` +
          `With no match reads are allowed and actuators denied. Explain a decision: ${hearthCommand()} policy test <principal> <tool> [args]\n\n${table(rows)}\n`,
      );
    });

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
      .action(async (subject: string, flags: AddFlags) => {
        const num = (flag: string, raw: string | undefined, min: number, max = Number.MAX_SAFE_INTEGER) =>
          raw === undefined ? undefined : wholeNumber(flag, raw, { min, max });
        const params = {
          effect,
          subject,
          tool: flags.tool,
          entity: flags.entity,
          area: flags.area,
          kind: flags.kind,
          deviceClass: flags.deviceClass,
          capability: flags.capability,
          action: flags.action,
          priority: num('--priority', flags.priority, -1_000_000, 1_000_000),
          window: flags.window,
          days: flags.days,
          maxCalls: num('--max-calls', flags.maxCalls, 1),
          per: num('--per', flags.per, 1),
          note: flags.note,
          fromArea: flags.fromArea,
        };
        const { addRule } = await import('../daemon/methods/policy.js');
        const added = await askHearth(flags, 'policy.add', params, (h, p) => addRule(h, p as never), { typed: { subject: '<subject>' } });
        if (flags.json) return printJson(added);
        const rule = added.rule;
        const lines = [`added rule #${rule.id}: ${rule.description}${rule.note ? ` (${rule.note})` : ''}`];
        lines.push(
          `  ${targetText(rule)}, action ${rule.action}, ${rule.effect}, priority ${rule.priority}, ${whenText(rule)}${rule.maxCalls !== null ? `, ${rateText(rule)}` : ''}`,
        );
        for (const note of added.notes) lines.push(`  note: ${note}`);
        lines.push(`  undo: ${added.undo}`);
        process.stdout.write(`${lines.join('\n')}\n`);
      });
  }

  withConfigOptions(policy.command('remove'))
    .alias('rm')
    .description('remove a rule by id (built-in rules too: they do not come back by themselves)')
    .argument('<id>', 'rule id, as `hearth policy list` shows it')
    .action(async (rawId: string, flags: CommonFlags) => {
      const id = wholeNumber('<id>', rawId, { min: 1 });
      const { removeRule } = await import('../daemon/methods/policy.js');
      const { rule: r, restore } = await askHearth(flags, 'policy.remove', { id }, (h, p) => removeRule(h, p as { id: number }), { typed: { id: '<id>' } });
      const lines = [`removed ${r.builtin ? 'built-in ' : ''}rule #${r.id}: ${r.description}${r.note ? ` (${r.note})` : ''}`];
      if (r.builtin) lines.push(`  it was a built-in default and will not come back by itself; to restore it:\n  ${restore}`);
      else lines.push(`  to add it again: ${restore}`);
      process.stdout.write(`${lines.join('\n')}\n`);
    });

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
        const params = {
          principal: principalId,
          tool: toolName,
          args: jsonObjectArg('[args]', rawArgs),
          role: flags.role,
          at: flags.at !== undefined ? parseAt(flags.at) : undefined,
          fromArea: flags.fromArea,
        };
        const { testPolicy } = await import('../daemon/methods/policy.js');
        const a = await askHearth(flags, 'policy.test', params, (h, p) => testPolicy(h, p as never), {
          typed: { principal: 'principal', tool: '<tool>', args: '[args]' },
        });
        if (flags.json) return printJson(a);
        process.stdout.write(explanationText(a));
      },
    );

  withConfigOptions(policy.command('roles'))
    .description("show or set a principal's roles (rules can name roles: role:owner); without a principal: every principal with stored roles")
    .argument('[principal]', 'chat:alice, voice:kitchen, ...')
    .argument('[roles...]', 'the roles to set (replaces the stored ones)')
    .option('--clear', 'remove every stored role of the principal')
    .action(async (principalId: string | undefined, roles: string[], flags: CommonFlags & { clear?: boolean }) => {
      const { roles: rolesOf } = await import('../daemon/methods/policy.js');
      const list = await askHearth(flags, 'policy.roles', { principal: principalId, roles, clear: flags.clear }, rolesOf, {
        typed: { principal: 'principal', roles: '[roles...]' },
      });
      if (principalId === undefined) {
        if (!list.length) return void process.stdout.write(`no principal has stored roles; set some with: ${hearthCommand()} policy roles chat:alice owner\n`);
        const rows = [['PRINCIPAL', 'ROLES']];
        for (const x of list) rows.push([x.principal, x.roles.join(', ') || '-']);
        return void process.stdout.write(`${table(rows)}\n`);
      }
      const x = list[0];
      if (x.changed === 'cleared') return void process.stdout.write(`${x.principal}: roles cleared\n`);
      process.stdout.write(`${x.principal}: ${x.roles.length ? `roles ${x.roles.join(', ')}` : 'no stored roles'}${x.changed === 'set' ? ' (set)' : ''}\n`);
    });
}
