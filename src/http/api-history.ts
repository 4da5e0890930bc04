// GET /api/history?entity=&since=&until=&points=: one entity's recorded
// history (src/history), downsampled to about `points` for long ranges, under
// the one read check every surface asks (Hearth.readDenied): an entity the
// caller may not read is refused, as on GET /api/devices/:id/frame.
import { HistoryRangeError, parseRange } from '../history/query.js';
import { badField, forbidden } from './errors.js';
import type { ApiContext, Route } from './route.js';

export function historyRoutes({ hearth }: ApiContext): Route[] {
  return [
    {
      method: 'GET',
      path: '/api/history',
      handler: ({ query, principal }) => {
        const id = query.get('entity');
        if (!id) throw badField('entity', 'is required: the id of the entity whose history to show (GET /api/devices lists them)');
        const entity = hearth.bridge.registry.entity(id);
        if (!entity) throw badField('entity', `no entity ${JSON.stringify(id.slice(0, 100))}; GET /api/devices lists them`);
        const denied = hearth.readDenied(principal, entity);
        if (denied) throw forbidden(`not allowed to read ${entity.id}: ${denied}`);
        let range: ReturnType<typeof parseRange>;
        try {
          range = parseRange({ since: query.get('since'), until: query.get('until'), points: query.get('points') });
        } catch (err) {
          if (err instanceof HistoryRangeError) throw badField(err.field, err.message.slice(err.field.length + 2));
          throw err;
        }
        const series = hearth.history.series(entity.id, range.since, range.until, range.points);
        return { entity: entity.id, name: entity.name, kind: entity.kind, unit: entity.unit ?? null, retentionDays: hearth.history.retentionDays, ...series };
      },
    },
  ];
}
