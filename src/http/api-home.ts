// The home as people arrange it (src/devices/home), for the page and scripts. Reading needs a token; every
// change is an owner's (as policy edits are):
//   GET    /api/home/devices            devices with their area, floor, where the area came from, aliases, and
//                                       each entity's category and exposure (entities the caller may not read left out)
//   GET    /api/home/areas              areas: stored, and those only a source names (to others than owners:
//                                       only areas holding something the caller may read, counted as such)
//   GET    /api/home/floors             floors with their areas (the same way)
//   POST   /api/home/devices/:id        {area | noArea | resetArea, create?, name | resetName, aliases, exposed | resetExposed}
//   DELETE /api/home/devices/:id        forget a device that is gone (away: no source has it): its command topics
//                                       and names are free for a newcomer (404 when none is remembered, 409 while present)
//   POST   /api/home/devices/:id/move   {to?}: confirm a device's move (renamed in Zigbee2MQTT): it takes the command
//                                       topics its source gives it now (404 when no move waits, 409 when it goes elsewhere than `to`)
//   POST   /api/home/entities/:id       {area | noArea | resetArea, create?, exposed | resetExposed}
//   POST   /api/home/areas              {name, floor?, aliases?}
//   POST   /api/home/areas/:area        {name?, floor? (null: none), aliases?}
//   DELETE /api/home/areas/:area
//   POST   /api/home/floors             {name, level?, aliases?}
//   POST   /api/home/floors/:floor      {name?, level? (null: none), aliases?}
//   DELETE /api/home/floors/:floor
//   GET    /api/home/export             the home file (YAML), as `hearth home export` writes it
//   POST   /api/home/import             {text}: the report (unknown devices, problems)
import { exportHome, importHome } from '../devices/home/home-file.js';
import { HomeError } from '../devices/home/place-names.js';
import { mayArrangeHome, type HomeDeviceJson } from '../devices/home/home-setup.js';
import type { Principal } from '../tools/types.js';
import { onlyFields } from './body.js';
import { badField, forbidden, HttpError } from './errors.js';
import { isOwner, type ApiContext, type Route } from './route.js';

const DEVICE_FIELDS = ['area', 'noArea', 'resetArea', 'create', 'name', 'resetName', 'aliases', 'exposed', 'resetExposed'];
const ENTITY_FIELDS = ['area', 'noArea', 'resetArea', 'create', 'exposed', 'resetExposed'];

/** A HomeError as an HTTP answer: the field, and 404 / 409 where the thing named is missing or taken. */
function asHttp(err: unknown): unknown {
  if (!(err instanceof HomeError)) return err;
  const field = err.field.split(/[.[]/)[0]!;
  if (err.code === 'not_found') return new HttpError(404, 'not_found', err.message, { field });
  if (err.code === 'conflict') return new HttpError(409, 'conflict', err.message, { field });
  return badField(err.field, err.message.slice(err.field.length + 2));
}

function run<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw asHttp(err);
  }
}

function types(body: Record<string, unknown>, strings: string[], booleans: string[]): void {
  for (const k of strings) if (body[k] !== undefined && typeof body[k] !== 'string') throw badField(k, `must be text, got ${typeof body[k]}`);
  for (const k of booleans)
    if (body[k] !== undefined && typeof body[k] !== 'boolean') throw badField(k, `must be true or false, got ${JSON.stringify(body[k])}`);
  if (body.aliases !== undefined && !(Array.isArray(body.aliases) && body.aliases.every((a) => typeof a === 'string')))
    throw badField('aliases', 'must be a list of names');
}

export function homeRoutes({ hearth }: ApiContext): Route[] {
  const owner = (principal: Principal, what: string) => {
    if (!mayArrangeHome(principal)) throw forbidden(`only an owner may ${what}; ask an owner (\`hearth token create <name> --role owner\` gives one a token)`);
  };
  const area = (b: Record<string, unknown>) => (b.resetArea ? undefined : b.noArea ? null : (b.area as string | undefined));
  const changesArea = (b: Record<string, unknown>) => b.area !== undefined || b.noArea === true || b.resetArea === true;
  const exposed = (b: Record<string, unknown>) => (b.resetExposed ? undefined : (b.exposed as boolean | undefined));
  const changesExposed = (b: Record<string, unknown>) => b.exposed !== undefined || b.resetExposed === true;
  /** A device as this caller may see it: only the entities it may read. */
  const visible = (principal: Principal, d: HomeDeviceJson): HomeDeviceJson | undefined => {
    const entities = d.entities.filter((e) => {
      const entity = hearth.bridge.registry.entity(e.id);
      return !!entity && !hearth.readDenied(principal, entity);
    });
    return entities.length ? { ...d, entities } : undefined;
  };
  return [
    {
      method: 'GET',
      path: '/api/home/devices',
      handler: ({ principal }) =>
        hearth.home
          .devices()
          .map((d) => visible(principal, d))
          .filter(Boolean),
    },
    {
      method: 'GET',
      path: '/api/home/areas',
      handler: ({ principal }) => {
        if (isOwner(principal)) return hearth.home.areas();
        // What a caller may not read is neither named nor counted: only areas it can see something in.
        const counts = new Map<string, number>();
        for (const d of hearth.home.devices()) {
          const seen = visible(principal, d);
          if (seen?.area) counts.set(seen.area, (counts.get(seen.area) ?? 0) + 1);
        }
        return hearth.home
          .areas()
          .filter((a) => counts.has(a.name))
          .map((a) => ({ ...a, devices: counts.get(a.name)! }));
      },
    },
    {
      method: 'GET',
      path: '/api/home/floors',
      handler: ({ principal }) => {
        if (isOwner(principal)) return hearth.home.floors();
        const areas = new Set(
          hearth.home
            .devices()
            .map((d) => visible(principal, d)?.area)
            .filter(Boolean),
        );
        return hearth.home
          .floors()
          .map((f) => ({ ...f, areas: f.areas.filter((a) => areas.has(a)) }))
          .filter((f) => f.areas.length);
      },
    },
    {
      method: 'POST',
      path: '/api/home/devices/:id',
      handler: async ({ principal, params, body }) => {
        owner(principal, "change a device's area, name, aliases or exposure");
        const b = await body();
        onlyFields(b, DEVICE_FIELDS);
        types(b, ['area', 'name'], ['noArea', 'resetArea', 'create', 'resetName', 'exposed', 'resetExposed']);
        return run(() => {
          const home = hearth.home;
          let device = home.device(params.id, 'id');
          if (changesArea(b)) device = home.setDeviceArea(device.id, area(b), { create: b.create === true });
          if (b.name !== undefined || b.resetName === true) device = home.renameDevice(device.id, b.resetName ? undefined : (b.name as string));
          if (b.aliases !== undefined) device = home.setDeviceAliases(device.id, b.aliases);
          if (changesExposed(b)) device = home.exposeDevice(device.id, exposed(b));
          return home.deviceJson(device);
        });
      },
    },
    {
      method: 'DELETE',
      path: '/api/home/devices/:id',
      handler: ({ principal, params }) => {
        owner(principal, 'forget devices');
        const id = params.id;
        const { forgotten, present } = hearth.bridge.registry.forgetDevice(id);
        if (present && !forgotten.length)
          throw new HttpError(409, 'conflict', `${id} is in the home now (its source announces it): remove it at its source first, then forget it`, {
            field: 'id',
          });
        if (!forgotten.length) throw new HttpError(404, 'not_found', `Hearth remembers no device ${JSON.stringify(id)}`, { field: 'id' });
        hearth.bridge.log.info(
          { device: id, forgotten, by: principal.id, ...(present ? { present } : {}) },
          present
            ? `forgot what ${id} no longer has at ${principal.id}'s word: those entities' topics and names are free`
            : `forgot ${id} at ${principal.id}'s word: its command topics and names are free`,
        );
        return { device: id, forgotten, ...(present ? { present: true } : {}) };
      },
    },
    {
      method: 'POST',
      path: '/api/home/devices/:id/move',
      handler: async ({ principal, params, body }) => {
        owner(principal, "confirm a device's move to new command topics");
        const b = await body();
        onlyFields(b, ['to']);
        types(b, ['to'], []);
        const id = params.id;
        const { moved, going } = hearth.bridge.registry.confirmMove(id, b.to as string | undefined);
        if (!going.length) throw new HttpError(404, 'not_found', `no move of ${JSON.stringify(id)} waits for a confirmation`, { field: 'id' });
        if (!moved.length)
          throw new HttpError(409, 'conflict', `${id} is being moved to ${going.join(', ')} now, not to ${String(b.to)}: look again and confirm what you see`, {
            field: 'to',
          });
        hearth.bridge.log.info(
          { device: id, moved, by: principal.id },
          `${id} moved at ${principal.id}'s word: it holds ${going.join(', ')} now, and its old command topics are free`,
        );
        return { device: id, moved: moved.map((m) => ({ entity: m.entity, from: [...m.from], to: [...m.to] })) };
      },
    },
    {
      method: 'POST',
      path: '/api/home/entities/:id',
      handler: async ({ principal, params, body }) => {
        owner(principal, "change an entity's area or exposure");
        const b = await body();
        onlyFields(b, ENTITY_FIELDS);
        types(b, ['area'], ['noArea', 'resetArea', 'create', 'exposed', 'resetExposed']);
        return run(() => {
          const home = hearth.home;
          let entity = home.entity(params.id, 'id');
          if (changesArea(b)) entity = home.setEntityArea(entity.id, area(b), { create: b.create === true });
          if (changesExposed(b)) entity = home.exposeEntity(entity.id, exposed(b));
          return home.deviceJson(home.device(entity.deviceId));
        });
      },
    },
    {
      method: 'POST',
      path: '/api/home/areas',
      handler: async ({ principal, body }) => {
        owner(principal, 'add areas');
        const b = await body();
        onlyFields(b, ['name', 'floor', 'aliases']);
        if (b.name === undefined) throw badField('name', 'is required: the area\'s name ("Living room")');
        types(b, ['name', 'floor'], []);
        return run(() => hearth.home.addArea(b.name, { floor: b.floor, aliases: b.aliases }));
      },
    },
    {
      method: 'POST',
      path: '/api/home/areas/:area',
      handler: async ({ principal, params, body }) => {
        owner(principal, 'change areas');
        const b = await body();
        onlyFields(b, ['name', 'floor', 'aliases']);
        types(b, ['name'], []);
        if (b.floor !== undefined && b.floor !== null && typeof b.floor !== 'string') throw badField('floor', "must be a floor's name, or null for none");
        return run(() => hearth.home.updateArea(params.area, { name: b.name, floor: b.floor, aliases: b.aliases }));
      },
    },
    {
      method: 'DELETE',
      path: '/api/home/areas/:area',
      handler: ({ principal, params }) => {
        owner(principal, 'remove areas');
        return run(() => hearth.home.removeArea(params.area));
      },
    },
    {
      method: 'POST',
      path: '/api/home/floors',
      handler: async ({ principal, body }) => {
        owner(principal, 'add floors');
        const b = await body();
        onlyFields(b, ['name', 'level', 'aliases']);
        if (b.name === undefined) throw badField('name', 'is required: the floor\'s name ("Upstairs")');
        types(b, ['name'], []);
        return run(() => hearth.home.addFloor(b.name, { level: b.level, aliases: b.aliases }));
      },
    },
    {
      method: 'POST',
      path: '/api/home/floors/:floor',
      handler: async ({ principal, params, body }) => {
        owner(principal, 'change floors');
        const b = await body();
        onlyFields(b, ['name', 'level', 'aliases']);
        types(b, ['name'], []);
        return run(() => hearth.home.updateFloor(params.floor, { name: b.name, level: b.level, aliases: b.aliases }));
      },
    },
    {
      method: 'DELETE',
      path: '/api/home/floors/:floor',
      handler: ({ principal, params }) => {
        owner(principal, 'remove floors');
        return run(() => hearth.home.removeFloor(params.floor));
      },
    },
    {
      method: 'GET',
      path: '/api/home/export',
      handler: ({ principal, res }) => {
        owner(principal, 'export the home');
        const text = exportHome(hearth.bridge.registry.home, hearth.bridge.registry.devices());
        res.writeHead(200, { 'content-type': 'application/yaml; charset=utf-8', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
        res.end(text);
      },
    },
    {
      method: 'POST',
      path: '/api/home/import',
      handler: async ({ principal, body }) => {
        owner(principal, 'import a home file');
        const b = await body();
        onlyFields(b, ['text']);
        if (typeof b.text !== 'string') throw badField('text', 'is required: the home file (YAML) as text');
        return run(() => importHome(hearth.bridge.registry.home, hearth.bridge.registry.devices(), b.text as string));
      },
    },
  ];
}
