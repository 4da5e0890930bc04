// GET /api/devices: the entities the caller may read, each with its live
// state (the `hearth devices --json` shape, plus its device). GET /api/health
// needs no token and then says only that the server is up; with a token it
// adds the broker's state and how many of the caller's entities report. GET /api/devices/refused (owners): the
// entities left out for their command topic, each with whose topic it is (present, or away) or why none may have it.
import { refusedClaimsJson } from '../present/refused-claim.js';
import { stateJson } from '../present/state.js';
import { ANONYMOUS } from './auth.js';
import { forbidden } from './errors.js';
import { isOwner, Reply, type ApiContext, type Route } from './route.js';

export function deviceRoutes({ hearth }: ApiContext): Route[] {
  const bridge = hearth.bridge;
  return [
    {
      method: 'GET',
      path: '/api/health',
      auth: false,
      handler: ({ principal }) => {
        // Versions, counts and the broker's state are for callers with a token.
        if (principal.id === ANONYMOUS.id) return { ok: true };
        const entities = hearth.visibleEntities(principal);
        const reporting = entities.filter((e) => {
          const s = bridge.cache.get(e.id);
          return s && (s.value !== undefined || s.frame);
        }).length;
        const broker = bridge.connection.state;
        const ok = broker === 'connected';
        return new Reply(ok ? 200 : 503, { ok, broker, entities: entities.length, reporting });
      },
    },
    {
      method: 'GET',
      path: '/api/devices/refused',
      handler: ({ principal }) => {
        // It names entities, topics and owners whatever the caller may read: an owner's.
        if (!isOwner(principal)) throw forbidden('only an owner may see which entities were left out for their command topic');
        return refusedClaimsJson(bridge);
      },
    },
    {
      method: 'GET',
      path: '/api/devices',
      handler: ({ principal }) => {
        const now = Date.now();
        return hearth.visibleEntities(principal).map((e) => ({ ...stateJson(e, bridge.cache.get(e.id), now), device: e.deviceId }));
      },
    },
  ];
}
