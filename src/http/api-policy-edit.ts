// The policy table edited from the page, by owners only, with the CLI's words
// (`hearth policy allow|deny|confirm`, `hearth policy remove`):
//   POST   /api/policy/rules              {effect, subject, targetType?, target?, action?,
//                                         priority?, window?, days?, maxCalls?, perSeconds?, note?}
//   DELETE /api/policy/rules/:id
//   POST   /api/policy/rules/:id/priority {priority}: move a rule up or down the order
// Every answer carries the rule's description and the CLI command that adds it.
import { ruleCommand } from '../policy/rule-command.js';
import { PolicyRuleError, type NewRule } from '../policy/rules.js';
import type { PolicyRule } from '../policy/rules.js';
import type { Principal } from '../tools/types.js';
import { onlyFields } from './body.js';
import { badField, forbidden, notFound } from './errors.js';
import { isOwner, type ApiContext, type Route } from './route.js';

const FIELDS = ['effect', 'subject', 'targetType', 'target', 'action', 'priority', 'window', 'days', 'maxCalls', 'perSeconds', 'note'];

export function policyEditRoutes({ hearth }: ApiContext): Route[] {
  const policy = hearth.policy;
  const owner = (principal: Principal, what: string) => {
    if (!isOwner(principal)) throw forbidden(`only an owner may ${what} policy rules; ${principal.id} can test its own calls with POST /api/policy/test`);
  };
  const ruleId = (raw: string): number => {
    if (!/^\d{1,9}$/.test(raw)) throw badField('id', `must be a rule id (a whole number), got ${JSON.stringify(raw.slice(0, 40))}`);
    return Number(raw);
  };
  const shown = (r: PolicyRule) => ({ ...r, description: policy.describe(r), command: ruleCommand(r) });
  const checked = <T>(fn: () => T): T => {
    try {
      return fn();
    } catch (err) {
      if (err instanceof PolicyRuleError) throw badField(err.field, err.message.slice(err.field.length + 2));
      throw err;
    }
  };
  return [
    {
      method: 'POST',
      path: '/api/policy/rules',
      handler: async ({ principal, body }) => {
        owner(principal, 'add');
        const input = await body();
        onlyFields(input, FIELDS);
        if (input.effect === undefined) throw badField('effect', 'is required: allow, deny or confirm (as in hearth policy allow|deny|confirm)');
        if (input.subject === undefined) throw badField('subject', "is required: a principal or glob (chat:alice), a role (role:owner) or '*'");
        const rule = checked(() => policy.add({ targetType: 'any', ...input } as unknown as NewRule));
        return shown(rule);
      },
    },
    {
      method: 'DELETE',
      path: '/api/policy/rules/:id',
      handler: ({ principal, params }) => {
        owner(principal, 'remove');
        const id = ruleId(params.id);
        const result = policy.remove(id);
        if (!result.removed || !result.rule) throw notFound(`no rule #${id}; GET /api/policy/rules lists them`);
        return { removed: shown(result.rule), builtin: result.builtin };
      },
    },
    {
      method: 'POST',
      path: '/api/policy/rules/:id/priority',
      handler: async ({ principal, params, body }) => {
        owner(principal, 'reorder');
        const id = ruleId(params.id);
        const input = await body();
        onlyFields(input, ['priority']);
        if (typeof input.priority !== 'number' || !Number.isInteger(input.priority))
          throw badField('priority', `must be a whole number, got ${JSON.stringify(input.priority)}`);
        const rule = checked(() => policy.setPriority(id, input.priority as number));
        if (!rule) throw notFound(`no rule #${id}; GET /api/policy/rules lists them`);
        return shown(rule);
      },
    },
  ];
}
