// GET /api/devices/:id/frame: a camera's latest frame, as the camera sent it
// (PNG, JPEG, GIF or WebP: the state cache takes nothing else). It needs the
// token like every /api route (the page fetches it into a blob: URL), and the
// one read check every surface asks (Hearth.readableEntity): an entity the
// caller may not read is answered as one that does not exist.
import { HttpError, noEntity, notFound } from './errors.js';
import type { ApiContext, Route } from './route.js';
import { FRAME_KINDS } from '../devices/model.js';

export function frameRoutes({ hearth }: ApiContext): Route[] {
  return [
    {
      method: 'GET',
      path: '/api/devices/:id/frame',
      handler: ({ params, principal, req, res }) => {
        // Unknown and not readable answer alike, before anything about the entity is said (its kind either).
        const entity = hearth.readableEntity(principal, params.id, 'GET /api/devices/:id/frame');
        if (!entity) throw noEntity(params.id);
        if (!FRAME_KINDS.has(entity.kind)) throw notFound(`${entity.id} is a ${entity.kind}, not a camera; it has no frame`);
        const state = hearth.bridge.cache.get(entity.id);
        if (!state?.frame) {
          throw new HttpError(
            404,
            'no_frame',
            `the camera ${JSON.stringify(entity.name)} has not sent a frame yet${state?.available === false ? ' and is offline' : ''}`,
          );
        }
        const frame = state.frame;
        const etag = `"${frame.at.toString(36)}-${frame.bytes.length.toString(36)}"`;
        const headers = {
          'cache-control': 'private, no-cache',
          etag,
          'x-frame-at': new Date(frame.at).toISOString(),
          'x-camera-available': String(state.available),
          'x-content-type-options': 'nosniff',
          'content-security-policy': "default-src 'none'; sandbox",
        };
        if (req.headers['if-none-match'] === etag) {
          res.writeHead(304, headers);
          res.end();
          return undefined;
        }
        res.writeHead(200, { ...headers, 'content-type': frame.contentType, 'content-length': frame.bytes.length });
        res.end(frame.bytes);
        return undefined;
      },
    },
  ];
}
