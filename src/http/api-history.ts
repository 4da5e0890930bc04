// GET /api/history?entity=&since=&until=&points=: one entity's recorded
// history (src/history), downsampled to about `points` for long ranges, under
// the one read check every surface asks (Hearth.readableEntity): an entity the
// caller may not read is answered as one that does not exist (404), as on
// GET /api/devices/:id/frame. `reach` says how far back raw changes and
// five-minute summaries go (the budget prunes the oldest first).
import { HistoryRangeError, parseRange } from '../history/query.js';
import { describeReach, type HistoryReach } from '../history/store.js';
import { badField, noEntity } from './errors.js';
import type { ApiContext, Route } from './route.js';

export function historyRoutes({ hearth }: ApiContext): Route[] {
  return [
    {
      method: 'GET',
      path: '/api/history',
      handler: ({ query, principal }) => {
        const id = query.get('entity');
        if (!id) throw badField('entity', 'is required: the id of the entity whose history to show (GET /api/devices lists them)');
        // Unknown and not readable answer alike (the refusal is audited).
        const entity = hearth.readableEntity(principal, id, 'GET /api/history');
        if (!entity) throw noEntity(id);
        let range: ReturnType<typeof parseRange>;
        try {
          range = parseRange({ since: query.get('since'), until: query.get('until'), points: query.get('points') });
        } catch (err) {
          if (err instanceof HistoryRangeError) throw badField(err.field, err.message.slice(err.field.length + 2));
          throw err;
        }
        const series = hearth.history.series(entity.id, range.since, range.until, range.points);
        return { entity: entity.id, name: entity.name, kind: entity.kind, unit: entity.unit ?? null, ...series, reach: reachOf(hearth.history.reach()) };
      },
    },
  ];
}

/** How far back history reaches, as times and in words (the page's note under an empty chart). */
function reachOf(reach: HistoryReach) {
  const iso = (ts: number | null) => (ts === null ? null : new Date(ts).toISOString());
  return {
    raw: iso(reach.rawSince),
    rollups: iso(reach.rollupSince),
    usedMb: Math.round(reach.usedBytes / 2 ** 20),
    budgetMb: Math.round(reach.budgetBytes / 2 ** 20),
    text: describeReach(reach),
  };
}
