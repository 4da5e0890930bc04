// GET /api/devices: every entity with its live state (the `hearth devices
// --json` shape per entity, plus its device); GET /api/health: no token needed.
import { stateJson } from '../cli/format.js';
import { Reply, type ApiContext, type Route } from './route.js';

export function deviceRoutes({ hearth }: ApiContext): Route[] {
  const bridge = hearth.bridge;
  return [
    {
      method: 'GET',
      path: '/api/health',
      auth: false,
      handler: () => {
        const entities = bridge.registry.entities();
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
      path: '/api/devices',
      handler: () => {
        const now = Date.now();
        return bridge.registry.entities().map((e) => ({ ...stateJson(e, bridge.cache.get(e.id), now), device: e.deviceId }));
      },
    },
  ];
}
