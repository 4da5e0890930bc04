// GET /api/tools and POST /api/tools/:name/call on a real demo home over a
// real HTTP server: the token's principal calls through policy and audit; bad
// bodies, unknown tools, no token and a caller who may not are refused.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startHttpServer, type HttpServer } from '../../src/http/server.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { startHome, type TestHome } from '../helpers/home.js';
import { waitFor } from '../helpers/wait.js';

describe('HTTP tools API', () => {
  let broker: TestBroker;
  let home: TestHome;
  let server: HttpServer;
  let ownerToken: string;
  let guestToken: string;

  async function api(method: string, path: string, token: string | null, body?: unknown, raw?: string) {
    const headers: Record<string, string> = {};
    if (token) headers.authorization = `Bearer ${token}`;
    if (body !== undefined || raw !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers,
      body: raw ?? (body === undefined ? undefined : JSON.stringify(body)),
      signal: AbortSignal.timeout(15_000),
    });
    const text = await res.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, json, text };
  }

  before(async () => {
    broker = await startAedes();
    home = await startHome(broker);
    server = await startHttpServer({ hearth: home.hearth, host: '127.0.0.1', port: 0, log: home.logs.log.child({ part: 'http' }) });
    ownerToken = home.hearth.tokens.create('nr-owner', 'nodered:owner').secret;
    home.hearth.policy.setRoles('nodered:owner', ['owner']);
    guestToken = home.hearth.tokens.create('nr-guest', 'nodered:guest').secret;
  });
  after(async () => {
    await server?.close();
    await home?.close();
    await broker?.stop();
  });

  it('lists the tools the caller could use, with their argument schema', async () => {
    const r = await api('GET', '/api/tools', ownerToken);
    assert.equal(r.status, 200, r.text);
    const lamp = r.json.find((t: { name: string }) => t.name === 'living_room_lamp');
    assert.ok(lamp, r.text);
    assert.equal(lamp.parameters.type, 'object');
    assert.deepEqual(lamp.entities, ['living_room_lamp.lamp']);
    const guest = await api('GET', '/api/tools', guestToken);
    assert.equal(guest.status, 200);
    assert.ok(!guest.json.some((t: { name: string }) => t.name === 'front_door_lock'), 'a guest is not shown the lock');
  });

  it('calls a tool as the token principal: the lamp switches and the audit row names the principal', async () => {
    const r = await api('POST', '/api/tools/living_room_lamp/call', ownerToken, { args: { action: 'turn_on' } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.isError, false);
    assert.match(r.json.text, /^confirmed: /);
    await waitFor('lamp on', () => home.hearth.bridge.cache.get('living_room_lamp.lamp')?.value === 'on');
    const row = home.hearth.audit.get(r.json.details.auditId)!;
    assert.equal(row.principal, 'nodered:owner');
    assert.equal(row.outcome, 'confirmed');
  });

  it('refuses bad input naming the field, an unknown tool, no token, and a caller who may not', async () => {
    let r = await api('POST', '/api/tools/living_room_lamp/call', ownerToken, { args: ['turn_on'] });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.error.field, 'args');
    r = await api('POST', '/api/tools/living_room_lamp/call', ownerToken, { args: {}, extra: 1 });
    assert.equal(r.status, 400, r.text);
    r = await api('POST', '/api/tools/living_room_lamp/call', ownerToken, undefined, '{not json');
    assert.equal(r.status, 400, r.text);
    r = await api('POST', '/api/tools/no_such_tool/call', ownerToken, { args: {} });
    assert.equal(r.status, 404, r.text);
    assert.match(r.json.error.message, /no tool "no_such_tool"/);
    r = await api('POST', '/api/tools/living_room_lamp/call', null, { args: { action: 'turn_off' } });
    assert.equal(r.status, 401, r.text);
    r = await api('POST', '/api/tools/front_door_lock/call', guestToken, { args: { action: 'unlock' } });
    assert.equal(r.status, 403, r.text);
    assert.match(r.json.error.message, /nodered:guest may not use front_door_lock/);
    assert.equal(home.hearth.bridge.cache.get('front_door.lock')?.value, 'locked');
  });
});
