// GET /api/tools and POST /api/tools/:name/call on a real demo home over a
// real HTTP server: the token's principal calls through policy and audit; bad
// bodies, unknown tools, no token and a caller who may not are refused.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { waitFor } from '../helpers/wait.js';
import { useHttpHome } from '../helpers/http-home.js';

describe('HTTP tools API', () => {
  const home = useHttpHome({
    tokens: {
      owner: { name: 'nr-owner', principal: 'nodered:owner', roles: ['owner'] },
      guest: { name: 'nr-guest', principal: 'nodered:guest' },
    },
  });
  const api = (method: string, path: string, token: string | null, body?: unknown, raw?: string) => home.api(method, path, { token, body, raw });

  it('lists the tools the caller could use, with their argument schema', async () => {
    const r = await api('GET', '/api/tools', home.secret('owner'));
    assert.equal(r.status, 200, r.text);
    const lamp = r.json.find((t: { name: string }) => t.name === 'living_room_lamp');
    assert.ok(lamp, r.text);
    assert.equal(lamp.parameters.type, 'object');
    assert.deepEqual(lamp.entities, ['living_room_lamp.lamp']);
    const guest = await api('GET', '/api/tools', home.secret('guest'));
    assert.equal(guest.status, 200);
    assert.ok(!guest.json.some((t: { name: string }) => t.name === 'front_door_lock'), 'a guest is not shown the lock');
  });

  it('calls a tool as the token principal: the lamp switches and the audit row names the principal', async () => {
    const r = await api('POST', '/api/tools/living_room_lamp/call', home.secret('owner'), { args: { action: 'turn_on' } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.isError, false);
    assert.match(r.json.text, /^confirmed: /);
    await waitFor('lamp on', () => home.hearth.bridge.cache.get('living_room_lamp.lamp')?.value === 'on');
    const row = home.hearth.audit.get(r.json.details.auditId)!;
    assert.equal(row.principal, 'nodered:owner');
    assert.equal(row.outcome, 'confirmed');
  });

  it('refuses bad input naming the field, an unknown tool, no token, and a caller who may not', async () => {
    let r = await api('POST', '/api/tools/living_room_lamp/call', home.secret('owner'), { args: ['turn_on'] });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.error.field, 'args');
    r = await api('POST', '/api/tools/living_room_lamp/call', home.secret('owner'), { args: {}, extra: 1 });
    assert.equal(r.status, 400, r.text);
    r = await api('POST', '/api/tools/living_room_lamp/call', home.secret('owner'), undefined, '{not json');
    assert.equal(r.status, 400, r.text);
    r = await api('POST', '/api/tools/no_such_tool/call', home.secret('owner'), { args: {} });
    assert.equal(r.status, 404, r.text);
    assert.match(r.json.error.message, /no tool "no_such_tool"/);
    r = await api('POST', '/api/tools/living_room_lamp/call', null, { args: { action: 'turn_off' } });
    assert.equal(r.status, 401, r.text);
    r = await api('POST', '/api/tools/front_door_lock/call', home.secret('guest'), { args: { action: 'unlock' } });
    assert.equal(r.status, 403, r.text);
    assert.match(r.json.error.message, /nodered:guest may not use front_door_lock/);
    assert.equal(home.hearth.bridge.cache.get('front_door.lock')?.value, 'locked');
  });
});
