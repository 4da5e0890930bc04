// Calls a `confirm` rule holds (unlocking, opening the garage): list them and
// decide them. Who may decide one is the policy's one approver check
// (owners, or a subject an `approve` rule names for the call's target);
// anyone else sees only the ones their own calls asked for, and decides none.
import type { Hearth } from '../hearth.js';
import type { Approval, ApprovalStatus } from '../policy/approvals.js';
import { approvalJson, notDecidableText } from '../present/approval.js';
import type { ApprovalTarget } from '../policy/types.js';
import type { Principal } from '../tools/types.js';
import { oneOf, onlyFields } from './body.js';
import { badField, forbidden, HttpError, notFound } from './errors.js';
import { isOwner, type ApiContext, type Route } from './route.js';

const STATUSES: readonly ApprovalStatus[] = ['pending', 'granted', 'denied', 'used', 'expired'];

/** What the held call acts on, as the approver check needs it. */
function targetOf(hearth: Hearth, a: Approval): ApprovalTarget {
  const e = a.entityId ? hearth.bridge.registry.entity(a.entityId) : undefined;
  return { tool: a.tool, ...(a.entityId ? { entityId: a.entityId } : {}), ...(e ? { area: e.area, kind: e.kind, deviceClass: e.deviceClass } : {}) };
}

/** May this principal grant or deny this approval? The policy decides (the same check as a session's allow_once). */
export function decidesApproval(hearth: Hearth, principal: Principal, a: Approval): boolean {
  return hearth.policy.mayApprove(principal, targetOf(hearth, a));
}

/** Whether a principal may see an approval. */
export function seesApproval(principal: Principal, a: Approval, hearth?: Hearth): boolean {
  return isOwner(principal) || a.principal === principal.id || (!!hearth && decidesApproval(hearth, principal, a));
}

export function approvalRoutes({ hearth }: ApiContext): Route[] {
  const approvals = hearth.approvals;
  return [
    {
      method: 'GET',
      path: '/api/approvals',
      handler: ({ query, principal }) => {
        const raw = query.get('status') ?? 'pending';
        if (raw !== 'all' && !STATUSES.includes(raw as ApprovalStatus))
          throw badField('status', `must be all or one of ${STATUSES.join(', ')}, got ${JSON.stringify(raw)}`);
        const rawLimit = query.get('limit') ?? '100';
        if (!/^\d{1,4}$/.test(rawLimit) || Number(rawLimit) < 1 || Number(rawLimit) > 1000) throw badField('limit', 'must be a whole number from 1 to 1000');
        const now = Date.now();
        return approvals
          .list({ status: raw === 'all' ? undefined : (raw as ApprovalStatus), limit: Number(rawLimit) })
          .filter((a) => seesApproval(principal, a, hearth))
          .map((a) => approvalJson(a, now));
      },
    },
    {
      method: 'GET',
      path: '/api/approvals/:id',
      handler: ({ params, principal }) => {
        const a = approvals.get(params.id);
        if (!a || !seesApproval(principal, a, hearth)) throw notFound(`no approval ${params.id}`);
        return approvalJson(a);
      },
    },
    {
      method: 'POST',
      path: '/api/approvals/:id',
      handler: async ({ params, principal, body }) => {
        const input = await body();
        onlyFields(input, ['decision']);
        const decision = oneOf(input, 'decision', ['grant', 'deny'] as const, true);
        const before = approvals.get(params.id);
        // Refused the same way whether or not the approval exists: a non-approver learns nothing from the answer.
        if (!before || !decidesApproval(hearth, principal, before)) {
          if (!before && isOwner(principal)) throw notFound(`no approval ${params.id}; pending ones: GET /api/approvals?status=pending`);
          throw forbidden(
            `only an owner, or a role an approve rule names, may ${decision} this approval; ${principal.id} has ${principal.roles.length ? `the roles ${principal.roles.join(', ')}` : 'no roles'}`,
          );
        }
        if (before.status !== 'pending') throw new HttpError(409, 'not_pending', notDecidableText(before), { status: before.status });
        // The principal's own id already says the door (http:anna): recorded as it is.
        const by = principal.id;
        const ok = decision === 'grant' ? approvals.grant(before.id, by) : approvals.deny(before.id, by);
        const after = approvals.get(before.id)!;
        if (!ok) throw new HttpError(409, after.refused ? 'grant_refused' : 'not_pending', notDecidableText(after), { status: after.status });
        return approvalJson(after);
      },
    },
  ];
}
