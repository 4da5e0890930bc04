// GET /api/events: one event stream for live pages: `state` (an entity's
// state changed, stateJson shape), `audit` (a call was recorded),
// `approval` (one was requested or decided) and `home` (the devices or their
// arrangement changed: read /api/home/* and /api/devices again; at most one a second). State goes only to callers the
// one read check (Hearth.readDenied) lets read the entity, asked per event so
// a new rule holds at once. Owners see every audit row and approval; anyone
// else only their own. The hub drops a client that stops reading, caps
// streams per token and ends a revoked token's streams (sse.ts).
import { auditRowJson } from '../present/audit-row.js';
import { principalWords } from '../present/principal.js';
import { stateJson } from '../present/state.js';
import type { StoredAuditRow } from '../audit/row.js';
import type { EntityState } from '../devices/state-cache.js';
import type { Entity } from '../devices/model.js';
import type { Approval } from '../policy/approvals.js';
import { approvalJson } from '../present/approval.js';
import { seesApproval } from './api-approvals.js';
import { isOwner, type ApiContext, type Route } from './route.js';

export function eventRoutes({ hearth, sse }: ApiContext): Route[] {
  return [
    {
      method: 'GET',
      path: '/api/events',
      handler: ({ res, principal, token }) => {
        const stream = sse.open(res, { principal: principal.id, token });
        const onState = (state: EntityState, entity: Entity) => {
          if (!hearth.readDenied(principal, entity)) stream.send('state', stateJson(entity, state));
        };
        const onAudit = (row: StoredAuditRow) => {
          if (isOwner(principal) || row.principal === principal.id) stream.send('audit', auditRowJson(row));
        };
        const onApproval = (kind: 'requested' | 'decided') => (a: Approval) => {
          if (seesApproval(principal, a)) stream.send('approval', { event: kind, ...approvalJson(a) });
        };
        // The home's arrangement changed (an area, a name, exposure, a device found): the page reads it again. At most
        // once a second, so a source republishing its devices cannot make every page refetch on every message.
        let homeTimer: NodeJS.Timeout | undefined;
        const onHome = () => {
          homeTimer ??= setTimeout(() => {
            homeTimer = undefined;
            stream.send('home', {});
          }, 1000);
        };
        const requested = onApproval('requested');
        const decided = onApproval('decided');
        hearth.bridge.cache.on('change', onState);
        hearth.audit.on('row', onAudit);
        hearth.approvals.on('requested', requested);
        hearth.approvals.on('decided', decided);
        hearth.bridge.registry.on('changed', onHome);
        stream.onClose(() => {
          hearth.bridge.registry.off('changed', onHome);
          clearTimeout(homeTimer);
          hearth.bridge.cache.off('change', onState);
          hearth.audit.off('row', onAudit);
          hearth.approvals.off('requested', requested);
          hearth.approvals.off('decided', decided);
        });
        stream.send('ready', {
          principal: principal.id,
          principalName: principalWords(principal.id),
          owner: isOwner(principal),
          entities: hearth.visibleEntities(principal).length,
        });
      },
    },
  ];
}
