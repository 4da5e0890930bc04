// The policy table over HTTP (read-only: rules are edited with `hearth policy`):
//   GET  /api/policy/rules   every rule in words, the principals and the tools (owners)
//   POST /api/policy/test    {principal?, tool, args?, at?}: what the policy would
//                            decide and every rule considered, without running
//                            anything or using up a rate limit.
// Anyone may test their own calls (the page asks before it auto-allows an
// action); testing another principal, and reading the rules, is for owners.
import { ruleCommand } from '../policy/rule-command.js';
import type { Principal } from '../tools/types.js';
import { onlyFields, optionalString, requiredString } from './body.js';
import { badField, forbidden, noEntity, notFound } from './errors.js';
import { isOwner, type ApiContext, type Route } from './route.js';

const PRINCIPAL_RE = /^[^\s*?|]{1,200}$/;

export function policyRoutes({ hearth }: ApiContext): Route[] {
  const policy = hearth.policy;
  return [
    {
      method: 'GET',
      path: '/api/policy/rules',
      handler: ({ principal }) => {
        if (!isOwner(principal)) throw forbidden(`only an owner may read the policy table; ${principal.id} can test its own calls with POST /api/policy/test`);
        return {
          rules: policy.list().map((r) => ({ ...r, description: policy.describe(r), command: ruleCommand(r) })),
          principals: policy.listPrincipals(),
          tools: hearth.tools.all().map((t) => ({ name: t.name, capability: t.capability, entities: t.meta.entityIds, actions: t.meta.actions })),
        };
      },
    },
    {
      method: 'POST',
      path: '/api/policy/test',
      handler: async ({ principal, body }) => {
        const input = await body();
        onlyFields(input, ['principal', 'tool', 'args', 'at']);
        const who = optionalString(input, 'principal', { pattern: PRINCIPAL_RE, hint: 'a principal id like http:alice, without spaces or wildcards' });
        const toolName = requiredString(input, 'tool', { max: 200 });
        const args = input.args ?? {};
        if (args === null || typeof args !== 'object' || Array.isArray(args)) throw badField('args', 'must be a JSON object of the call arguments');
        const atRaw = optionalString(input, 'at', { max: 60 });
        let at: Date | undefined;
        if (atRaw !== undefined) {
          at = new Date(atRaw);
          if (Number.isNaN(at.getTime())) throw badField('at', `must be a time such as 2025-01-31T18:00:00Z, got ${JSON.stringify(atRaw)}`);
        }
        let subject: Principal = principal;
        if (who !== undefined && who !== principal.id) {
          if (!isOwner(principal)) throw forbidden(`only an owner may test another principal's calls; ${principal.id} may test its own`);
          subject = policy.principal(who);
        }
        const noTool = () => notFound(`no tool ${JSON.stringify(toolName.slice(0, 80))}; GET /api/policy/rules lists the tools (or: hearth tools)`);
        // What the caller may not read is not there for it: an entity's own tool answers as a tool that does not
        // exist, an entity named in the arguments as one that does not exist (the refusal is audited).
        const tool = hearth.tools.get(toolName);
        if (tool && !tool.meta.group && tool.meta.entityIds.length === 1) {
          if (!hearth.readableEntity(principal, tool.meta.entityIds[0], 'POST /api/policy/test')) throw noTool();
        } else if (tool && !tool.meta.group) {
          const named = (args as Record<string, unknown>).entity ?? (args as Record<string, unknown>).camera;
          if (typeof named === 'string' && named && !hearth.readableEntity(principal, named, 'POST /api/policy/test')) throw noEntity(named);
        }
        const judged = hearth.tools.judgedPolicyRequest(toolName, args as Record<string, unknown>, subject, at);
        if (!judged) throw noTool();
        const { request, refusal } = judged;
        const explained = policy.explain(request);
        return {
          principal: { id: subject.id, roles: explained.roles },
          tool: request.tool,
          capability: request.capability,
          action: request.action,
          entityId: request.entityId ?? null,
          at: (at ?? new Date()).toISOString(),
          // Refused before any rule (what it would send cannot be judged): the call gets that, whatever the rules say.
          decision: refusal ?? explained.decision,
          // Every rule only for owners: the table is theirs to read.
          rules: isOwner(principal)
            ? explained.rules.map((c) => ({
                id: c.rule.id,
                effect: c.rule.effect,
                priority: c.rule.priority,
                description: c.description,
                matched: c.matched,
                decided: c.decided,
                why: c.why,
              }))
            : undefined,
        };
      },
    },
  ];
}
