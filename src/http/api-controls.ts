// The page's device controls, through the one pipeline as the signed-in
// principal (policy, approvals and audit apply as for the agent):
//   GET  /api/controls            per readable entity with an actuator tool:
//                                 its tool, arguments and, per action, whether
//                                 the policy could ever let this caller do it
//                                 and, if not, why
//   POST /api/devices/:id/call    {args}: run the entity's actuator tool; the
//                                 answer says confirmed, unconfirmed, held
//                                 (held for approval), denied, not_sent or
//                                 failed, as the call's audit row does
import type { Entity } from '../devices/model.js';
import type { GeneratedTool, Principal, ToolResultObject } from '../tools/types.js';
import { missingPermission } from '../policy/missing-permission.js';
import { actuatorProperties } from '../tools/parameters.js';
import { onlyFields } from './body.js';
import { badField, noEntity } from './errors.js';
import type { ApiContext, Route } from './route.js';

export type CallOutcome = 'confirmed' | 'unconfirmed' | 'held' | 'denied' | 'not_sent' | 'failed';

/** What a tool result means, in the words the page's badges use (as in chat); `audited` is its audit row's outcome. */
export function outcomeOf(result: ToolResultObject, audited?: string): CallOutcome {
  // Nothing left Hearth (no broker, the device offline): the audit's word, not "failed".
  if (audited === 'not_sent') return 'not_sent';
  const text = result.text ?? result.error ?? '';
  // Held by a confirm rule: nothing was sent; an approver decides (the audit's word too, src/present/audit-row.ts).
  if (result.details?.approvalId) return 'held';
  if (!result.isError) return text.startsWith('unconfirmed') ? 'unconfirmed' : 'confirmed';
  if (result.details?.decision === 'deny' || text.startsWith('not allowed') || text.startsWith('not done')) return 'denied';
  return 'failed';
}

export function controlRoutes({ hearth }: ApiContext): Route[] {
  const toolFor = (entity: Entity): GeneratedTool | undefined =>
    hearth.tools.all().find((t) => t.capability === 'actuator' && !t.meta.group && t.meta.entityIds.includes(entity.id));
  const mayEver = (principal: Principal, tool: GeneratedTool, entity: Entity, action: string): boolean =>
    hearth.policy.mayEverUse(principal, tool.name, {
      capability: 'actuator',
      kinds: [entity.kind],
      entityIds: [entity.id],
      areas: entity.area ? [entity.area] : [],
      actions: [action],
      deviceClasses: entity.deviceClass ? [entity.deviceClass] : [],
    });
  return [
    {
      method: 'GET',
      path: '/api/controls',
      handler: ({ principal }) => {
        const out: Record<string, unknown> = {};
        for (const entity of hearth.visibleEntities(principal)) {
          const tool = toolFor(entity);
          if (!tool) continue;
          // The entity's own arguments (its options and ranges): a grouped tool's schema does not list them.
          const props = { ...((tool.parameters.properties as Record<string, Record<string, unknown>>) ?? {}), ...actuatorProperties(entity).properties };
          delete props.entity;
          const actions = (props.action?.enum as string[] | undefined) ?? tool.meta.actions;
          const allowed: Record<string, { may: boolean; why?: string }> = {};
          for (const a of actions.length ? actions : ['actuate']) {
            const may = mayEver(principal, tool, entity, a);
            allowed[a] = may
              ? { may }
              : {
                  may,
                  why: `no policy rule lets ${principal.id} ${a.replace(/_/g, ' ')} ${entity.name}. ${missingPermission({ principal, action: a, entityId: entity.id, tool: tool.name }, { effect: 'deny', ruleId: null, reason: '' })}`,
                };
          }
          // The light's own brightness scale, to read a reported brightness as a percentage (its tool takes percent).
          const scale = entity.kind === 'light' && entity.ranges.brightness ? { brightness: entity.ranges.brightness } : undefined;
          out[entity.id] = { tool: tool.name, properties: props, actions: allowed, ...(scale ? { scale } : {}) };
        }
        return { principal: principal.id, controls: out };
      },
    },
    {
      method: 'POST',
      path: '/api/devices/:id/call',
      handler: async ({ params, principal, body }) => {
        const input = await body();
        onlyFields(input, ['args']);
        const args = input.args;
        if (args === undefined || args === null || typeof args !== 'object' || Array.isArray(args))
          throw badField('args', 'must be a JSON object of the call arguments, e.g. {"action": "turn_on"}');
        // Unknown and not readable answer alike (the refusal is audited).
        const entity = hearth.readableEntity(principal, params.id, 'POST /api/devices/:id/call');
        if (!entity) throw noEntity(params.id);
        const tool = toolFor(entity);
        if (!tool) throw badField('id', `${entity.id} is a ${entity.kind}: it has nothing to control`);
        // A tool that takes an entity (a grouped one, even while it acts on one entity alone) is told which.
        const takesEntity = 'entity' in ((tool.parameters.properties as Record<string, unknown> | undefined) ?? {});
        const callArgs = takesEntity ? { ...(args as Record<string, unknown>), entity: entity.id } : (args as Record<string, unknown>);
        const result = await hearth.tools.call(tool.name, callArgs, principal, { session: null });
        const details = result.details ?? {};
        const auditId = typeof details.auditId === 'number' ? details.auditId : undefined;
        return {
          entity: entity.id,
          tool: tool.name,
          outcome: outcomeOf(result, auditId === undefined ? undefined : hearth.audit.get(auditId)?.outcome),
          text: result.text ?? result.error ?? '',
          auditId: details.auditId ?? null,
          approvalId: details.approvalId ?? null,
        };
      },
    },
  ];
}
