// The HTTP API in-process on a real demo home (aedes, simulator, SQLite) with
// the offline intent model, driven by a real HTTP client (fetch).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { scopedSessionId } from '../../src/agent/sessions.js';
import { ConfigError } from '../../src/config/load.js';
import { startHttpServer } from '../../src/http/server.js';
import { OWNER } from '../helpers/home.js';
import { useHttpHome, OWNER_AND_GUEST } from '../helpers/http-home.js';
import { useHome } from '../helpers/use-home.js';
import { type SseEvent, sseReader } from '../helpers/http-client.js';
import { waitFor } from '../helpers/wait.js';

describe('HTTP API', () => {
  const home = useHttpHome({ tokens: OWNER_AND_GUEST });
  const api = (method: string, path: string, options: { token?: string | null; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {}) =>
    home.api(method, path, {
      token: options.token === undefined ? home.secret('owner') : options.token,
      body: options.body,
      raw: options.rawBody,
      headers: options.headers,
      timeoutMs: 10_000,
    });

  async function openSession(body: Record<string, unknown> = {}, token = home.secret('owner')): Promise<string> {
    const r = await api('POST', '/api/sessions', { body, token });
    assert.equal(r.status, 201, r.text);
    return r.json.id as string;
  }

  function promptStream(id: string, text: string, options: { token?: string; signal?: AbortSignal } = {}) {
    return fetch(`${home.server.url}/api/sessions/${id}/prompt`, {
      method: 'POST',
      headers: { authorization: `Bearer ${options.token ?? home.secret('owner')}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ text }),
      signal: options.signal ?? AbortSignal.timeout(15_000),
    });
  }

  const lamp = () => home.hearth.bridge.cache.get('living_room_lamp.lamp')?.value;

  it('answers /api/health without a token (only that it is up), with the details for a token', async () => {
    const r = await api('GET', '/api/health', { token: null });
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { ok: true });
    const owner = await api('GET', '/api/health');
    assert.deepEqual(owner.json, { ok: true, broker: 'connected', entities: 11, reporting: 11 });
  });

  it('refuses /api/* without a token or with a wrong one (401)', async () => {
    const none = await api('GET', '/api/devices', { token: null });
    assert.equal(none.status, 401);
    assert.equal(none.json.error.code, 'unauthorized');
    assert.match(none.json.error.message, /needs a token.*hearth token create/);
    assert.match(none.headers.get('www-authenticate') ?? '', /^Bearer/);
    const wrong = await api('GET', '/api/devices', { token: 'hearth_not-a-real-token' });
    assert.equal(wrong.status, 401);
    assert.match(wrong.json.error.message, /not valid/);
    const basic = await api('GET', '/api/devices', { token: null, headers: { authorization: 'Basic YTpi' } });
    assert.equal(basic.status, 401);
    assert.match(basic.json.error.message, /Bearer <token>/);
    // Unknown /api paths need the token too, then 404.
    assert.equal((await api('GET', '/api/nope', { token: null })).status, 401);
    const missing = await api('GET', '/api/nope');
    assert.equal(missing.status, 404);
    assert.equal(missing.json.error.code, 'not_found');
    const method = await api('DELETE', '/api/devices');
    assert.equal(method.status, 405);
    assert.equal(method.headers.get('allow'), 'GET');
  });

  it('refuses a browser request from another origin (403), allows same-origin', async () => {
    const foreign = await api('GET', '/api/devices', { headers: { origin: 'https://evil.example' } });
    assert.equal(foreign.status, 403);
    assert.equal(foreign.json.error.code, 'forbidden_origin');
    const foreignPost = await api('POST', '/api/sessions', { body: {}, headers: { origin: 'http://localhost:1' } });
    assert.equal(foreignPost.status, 403);
    const crossSite = await api('GET', '/api/devices', { headers: { 'sec-fetch-site': 'cross-site' } });
    assert.equal(crossSite.status, 403);
    const same = await api('GET', '/api/devices', { headers: { origin: home.server.url } });
    assert.equal(same.status, 200);
  });

  it('lists the entities with live state', async () => {
    const r = await api('GET', '/api/devices');
    assert.equal(r.status, 200);
    assert.equal(r.json.length, 11);
    const lock = r.json.find((e: { id: string }) => e.id === 'front_door.lock');
    assert.equal(lock.value, 'locked');
    assert.equal(lock.device, 'front_door');
    assert.equal(lock.available, true);
    assert.ok(lock.updatedAt);
    const camera = r.json.find((e: { id: string }) => e.id === 'front_door.camera');
    assert.equal(camera.frame.contentType, 'image/jpeg');
  });

  it('answers a call that sent nothing (the device offline) with outcome not_sent, as its audit row says', async () => {
    await home.sim.stopDevice('living_room_lamp');
    await waitFor('the lamp offline', () => home.hearth.bridge.cache.get('living_room_lamp.lamp')?.available === false);
    try {
      const r = await api('POST', '/api/devices/living_room_lamp.lamp/call', { body: { args: { action: 'turn_on' } } });
      assert.equal(r.status, 200);
      const body = r.json as { outcome: string; text: string; auditId: number };
      assert.equal(body.outcome, 'not_sent', body.text);
      assert.match(body.text, /offline .*nothing was sent/);
      assert.equal(home.hearth.audit.get(body.auditId)?.outcome, 'not_sent');
    } finally {
      await home.sim.startDevice('living_room_lamp');
      await waitFor('the lamp back', () => home.hearth.bridge.cache.get('living_room_lamp.lamp')?.available === true);
    }
  });

  it('opens a session and streams a prompt to its end: tool call, confirmed result, audit id; the lamp is on', async () => {
    assert.equal(lamp(), 'off');
    const created = await api('POST', '/api/sessions', { body: {} });
    assert.equal(created.status, 201);
    assert.equal(created.json.permissions, 'host');
    assert.equal(created.json.model, 'hearth-intent');
    assert.ok(created.json.tools.includes('host__living_room_lamp'));
    const id = created.json.id as string;

    const res = await promptStream(id, 'turn on the living room lamp');
    assert.equal(res.status, 200);
    const events = await sseReader(res).rest();
    const types = events.map((e) => e.event);
    assert.ok(types.includes('tool_call'), types.join(','));
    const call = events.find((e) => e.event === 'tool_call')!.data;
    assert.equal(call.name, 'host__living_room_lamp');
    assert.equal(call.args.action, 'turn_on');
    const result = events.find((e) => e.event === 'tool_result')!.data;
    assert.match(result.content, /^confirmed/);
    assert.equal(types[types.length - 1], 'result');
    const final = events[events.length - 1].data;
    assert.equal(final.stopReason, 'completed');
    assert.equal(final.auditIds.length, 1);
    assert.equal(final.toolCalls[0].name, 'living_room_lamp'); // the summary names tools as hearth tools lists them
    assert.equal(final.toolCalls[0].auditId, final.auditIds[0]);
    assert.ok(types.includes('token') && types.includes('done'));
    assert.equal(lamp(), 'on');
    const row = home.hearth.audit.list({ limit: 50 }).find((r) => r.id === final.auditIds[0])!;
    assert.equal(row.principal, 'http:owner');
    // The engine's id of the session: the id the client gave, in its principal's namespace.
    assert.equal(row.session, scopedSessionId('http', 'http:owner', id));
    assert.equal(row.outcome, 'confirmed');

    const mine = await api('GET', '/api/sessions');
    assert.ok(mine.json.some((s: { id: string; permissions: string }) => s.id === id && s.permissions === 'host'));
    const theirs = await api('GET', '/api/sessions', { token: home.secret('guest') });
    assert.ok(!theirs.json.some((s: { id: string }) => s.id === id));
  });

  it('answers one JSON object with ?stream=false or Accept: application/json (text in, text out)', async () => {
    const id = await openSession({ ephemeral: true });
    const r = await api('POST', `/api/sessions/${id}/prompt?stream=false`, { body: { text: 'turn off the living room lamp' } });
    assert.equal(r.status, 200, r.text);
    assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(r.json.stopReason, 'completed');
    assert.ok(r.json.text.length > 0);
    assert.match(r.json.text, /lamp/i);
    assert.equal(r.json.toolCalls.length, 1);
    assert.match(r.json.toolCalls[0].result, /^confirmed/);
    assert.equal(r.json.auditIds.length, 1);
    assert.equal(r.json.events, undefined);
    assert.equal(lamp(), 'off');

    const viaAccept = await api('POST', `/api/sessions/${id}/prompt?events=true`, {
      body: { text: 'is the living room lamp on?' },
      headers: { accept: 'application/json' },
    });
    assert.equal(viaAccept.status, 200);
    assert.equal(viaAccept.json.stopReason, 'completed');
    assert.ok(viaAccept.json.text.length > 0);
    assert.ok(viaAccept.json.events.some((e: { type: string }) => e.type === 'done'));
  });

  it("keeps sessions to their principal (another's is not found), and 404s an unknown one", async () => {
    const id = await openSession();
    const other = await api('POST', `/api/sessions/${id}/prompt?stream=false`, { token: home.secret('guest'), body: { text: 'turn on the living room lamp' } });
    assert.equal(other.status, 404);
    assert.equal(other.json.error.code, 'not_found');
    assert.equal((await api('GET', `/api/sessions/${id}`, { token: home.secret('guest') })).status, 404);
    assert.equal((await api('POST', `/api/sessions/${id}/interrupt`, { token: home.secret('guest') })).status, 404);
    // The same id from the guest is a session of the guest's own.
    const resume = await api('POST', '/api/sessions', { token: home.secret('guest'), body: { id } });
    assert.equal(resume.status, 201);
    assert.equal((await home.hearth.agent()).get(scopedSessionId('http', 'http:guest', id))?.principal.id, 'http:guest');
    const unknown = await api('POST', '/api/sessions/no-such-session/prompt', { body: { text: 'hello' } });
    assert.equal(unknown.status, 404);
    // The owner can resume it.
    const again = await api('POST', '/api/sessions', { body: { id } });
    assert.equal(again.status, 201);
    assert.equal(again.json.id, id);
  });

  it('409 turn_active while a turn waits for permission; the permissions endpoint resolves it', async () => {
    const id = await openSession({ permissions: 'jan' });
    const res = await promptStream(id, 'turn on the kitchen light');
    const stream = sseReader(res);
    const ask = (await stream.until('permission_request')).data;
    assert.equal(ask.tool_name, 'host__kitchen_light');

    const busy = await api('POST', `/api/sessions/${id}/prompt`, { body: { text: 'turn off the kitchen light' } });
    assert.equal(busy.status, 409);
    assert.equal(busy.json.error.code, 'turn_active');
    assert.equal(busy.json.error.retryable, true);

    const bad = await api('POST', `/api/sessions/${id}/permissions/${ask.request_id}`, { body: { decision: 'maybe' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.field, 'decision');
    const wrong = await api('POST', `/api/sessions/${id}/permissions/not-a-request`, { body: { decision: 'allow_once' } });
    assert.equal(wrong.status, 404);
    assert.equal(wrong.json.error.code, 'not_pending');

    const ok = await api('POST', `/api/sessions/${id}/permissions/${ask.request_id}`, { body: { decision: 'allow_once' } });
    assert.equal(ok.status, 200, ok.text);
    const rest = await stream.rest();
    assert.match(rest.find((e) => e.event === 'tool_result')!.data.content, /^confirmed/);
    const final = rest[rest.length - 1];
    assert.equal(final.event, 'result');
    assert.equal(final.data.stopReason, 'completed');
    assert.equal(home.hearth.bridge.cache.get('kitchen_light.light')?.value, 'on');
  });

  it('interrupts a turn on request, and when the client goes away', async () => {
    const id = await openSession({ permissions: 'jan' });
    const stream = sseReader(await promptStream(id, 'turn off the kitchen light'));
    await stream.until('permission_request');
    const r = await api('POST', `/api/sessions/${id}/interrupt`);
    assert.deepEqual(r.json, { id, interrupted: true });
    const rest = await stream.rest();
    assert.equal(rest[rest.length - 1].data.stopReason, 'interrupted');
    assert.equal(home.hearth.bridge.cache.get('kitchen_light.light')?.value, 'on');

    const abort = new AbortController();
    const gone = sseReader(await promptStream(id, 'turn off the kitchen light', { signal: abort.signal }));
    await gone.until('permission_request');
    abort.abort();
    // The turn ends, so the session takes a prompt again.
    const deadline = Date.now() + 3000;
    while ((await api('GET', `/api/sessions/${id}`)).json.busy) {
      assert.ok(Date.now() < deadline, 'the turn did not end within 3 s after the client left');
      await new Promise((r) => setTimeout(r, 25));
    }
    const next = await api('POST', `/api/sessions/${id}/prompt?stream=false`, { body: { text: 'is the kitchen light on?' } });
    assert.equal(next.status, 200);
    assert.equal(home.hearth.bridge.cache.get('kitchen_light.light')?.value, 'on');
  });

  it('holds the garage for approval; an owner grants it over HTTP and the retried call goes through; a guest may not grant', async () => {
    const id = await openSession();
    const first = await api('POST', `/api/sessions/${id}/prompt?stream=false`, { body: { text: 'open the garage door' } });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.json.toolCalls[0].isError, true);
    assert.match(first.json.toolCalls[0].result, /needs approval/);

    const pending = await api('GET', '/api/approvals?status=pending');
    assert.equal(pending.status, 200);
    const approval = pending.json.find((a: { principal: string; tool: string }) => a.principal === 'http:owner' && a.tool === 'garage_door');
    assert.ok(approval, pending.text);
    assert.equal(approval.status, 'pending');
    assert.equal(approval.args.action, 'open');

    const byGuest = await api('POST', `/api/approvals/${approval.id}`, { token: home.secret('guest'), body: { decision: 'grant' } });
    assert.equal(byGuest.status, 403);
    assert.match(byGuest.json.error.message, /only an owner/);
    // A guest sees only its own approvals.
    const guestList = await api('GET', '/api/approvals?status=pending', { token: home.secret('guest') });
    assert.deepEqual(guestList.json, []);

    const badDecision = await api('POST', `/api/approvals/${approval.id}`, { body: { decision: 'yes' } });
    assert.equal(badDecision.status, 400);
    assert.equal(badDecision.json.error.field, 'decision');
    const badStatus = await api('GET', '/api/approvals?status=whatever');
    assert.equal(badStatus.status, 400);
    assert.equal(badStatus.json.error.field, 'status');

    const granted = await api('POST', `/api/approvals/${approval.id}`, { body: { decision: 'grant' } });
    assert.equal(granted.status, 200, granted.text);
    assert.equal(granted.json.status, 'granted');
    assert.equal(granted.json.decidedBy, 'http:owner');
    assert.equal(granted.json.decidedByName, 'owner (token)');
    const twice = await api('POST', `/api/approvals/${approval.id}`, { body: { decision: 'grant' } });
    assert.equal(twice.status, 409);
    assert.equal(twice.json.error.code, 'not_pending');
    assert.equal((await api('POST', '/api/approvals/ffffffffffff', { body: { decision: 'deny' } })).status, 404);

    const retry = await api('POST', `/api/sessions/${id}/prompt?stream=false`, { body: { text: 'open the garage door' } });
    assert.equal(retry.status, 200);
    assert.match(retry.json.toolCalls[0].result, /^confirmed/);
    assert.equal(home.hearth.bridge.cache.get('garage_door.door')?.value, 'open');
    assert.equal(home.hearth.approvals.get(approval.id)!.status, 'used');
  });

  it('validates bodies: 413 too large, 400 malformed JSON or a bad field, 415 not JSON', async () => {
    const big = await api('POST', '/api/sessions', { rawBody: JSON.stringify({ systemPrompt: 'x'.repeat(2 * 1024 * 1024) }) });
    assert.equal(big.status, 413);
    assert.equal(big.json.error.code, 'body_too_large');

    const broken = await api('POST', '/api/sessions', { rawBody: '{"permissions": "host",' });
    assert.equal(broken.status, 400);
    assert.equal(broken.json.error.code, 'bad_json');
    assert.match(broken.json.error.message, /not valid JSON: .*JSON/);

    const notObject = await api('POST', '/api/sessions', { rawBody: '[1,2]' });
    assert.equal(notObject.status, 400);
    assert.match(notObject.json.error.message, /JSON object, not an array/);

    const perms = await api('POST', '/api/sessions', { body: { permissions: 'all' } });
    assert.equal(perms.status, 400);
    assert.equal(perms.json.error.field, 'permissions');
    assert.match(perms.json.error.message, /^permissions: must be one of jan, host/);

    const typo = await api('POST', '/api/sessions', { body: { ephemral: true } });
    assert.equal(typo.status, 400);
    assert.equal(typo.json.error.field, 'ephemral');

    const id = await openSession();
    const noText = await api('POST', `/api/sessions/${id}/prompt`, { body: {} });
    assert.equal(noText.status, 400);
    assert.equal(noText.json.error.field, 'text');
    const numText = await api('POST', `/api/sessions/${id}/prompt`, { body: { text: 5 } });
    assert.equal(numText.status, 400);
    assert.match(numText.json.error.message, /^text: must be a string/);

    const form = await api('POST', '/api/sessions', { rawBody: 'permissions=host', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    assert.equal(form.status, 415);
  });

  it('/api/events delivers a state change within a second, and the audit row', async () => {
    const res = await fetch(`${home.server.url}/api/events`, {
      headers: { authorization: `Bearer ${home.secret('owner')}` },
      signal: AbortSignal.timeout(10_000),
    });
    assert.equal(res.status, 200);
    const stream = sseReader(res);
    await stream.until('ready');
    const want = lamp() === 'on' ? 'off' : 'on';
    // When the bridge saw the lamp change, to compare with when the stream delivered it.
    let changedAt = 0;
    const onChange = (st: { value?: unknown }, e: { id: string }) => {
      if (e.id === 'living_room_lamp.lamp' && st.value === want && !changedAt) changedAt = Date.now();
    };
    home.hearth.bridge.cache.on('change', onChange as never);
    const call = home.hearth.tools.call('living_room_lamp', { action: want === 'on' ? 'turn_on' : 'turn_off' }, OWNER);
    let state: SseEvent;
    try {
      do state = await stream.until('state', 5000);
      while (state.data.id !== 'living_room_lamp.lamp' || state.data.value !== want);
    } finally {
      home.hearth.bridge.cache.off('change', onChange as never);
    }
    // The stream delivered the change the bridge saw (within the bounded wait above; how fast is bench/'s).
    assert.ok(changedAt > 0);
    assert.equal(state.data.kind, 'switch');
    await call;
    const audit = await stream.until('audit', 2000);
    assert.equal(audit.data.entityId, 'living_room_lamp.lamp');
    await stream.cancel();

    // A guest sees states but not the owner's audit rows.
    const guest = sseReader(
      await fetch(`${home.server.url}/api/events`, { headers: { authorization: `Bearer ${home.secret('guest')}` }, signal: AbortSignal.timeout(10_000) }),
    );
    await guest.until('ready');
    await home.hearth.tools.call('living_room_lamp', { action: want === 'on' ? 'turn_off' : 'turn_on' }, OWNER);
    await guest.until('state', 2000);
    // The lamp back as it was: its state reaches the guest after anything the first call sent it.
    await home.hearth.tools.call('living_room_lamp', { action: want === 'on' ? 'turn_on' : 'turn_off' }, OWNER);
    let back: SseEvent;
    do back = await guest.until('state', 2000);
    while (back.data.id !== 'living_room_lamp.lamp' || back.data.value !== want);
    await guest.cancel();
    assert.ok(!guest.seen.some((e) => e.event === 'audit'));
  });
});

describe('HTTP API settings', () => {
  const home = useHome();

  it('refuses http.auth false on a non-loopback host, with a config error', async () => {
    await assert.rejects(startHttpServer({ hearth: home.hearth, host: '0.0.0.0', port: 0, auth: false }), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.equal(err.field, 'http.auth');
      assert.match(err.message, /loopback/);
      return true;
    });
  });

  it('without auth on loopback everyone is http:local, an owner; other Host names are refused', async () => {
    const server = await startHttpServer({ hearth: home.hearth, host: '127.0.0.1', port: 0, auth: false });
    try {
      const devices = await fetch(`${server.url}/api/devices`);
      assert.equal(devices.status, 200);
      const created = await fetch(`${server.url}/api/sessions`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
      assert.equal(created.status, 201);
      const { id } = (await created.json()) as { id: string };
      const session = (await home.hearth.agent()).get(scopedSessionId('http', 'http:local', id))!;
      assert.deepEqual(session.principal, { id: 'http:local', roles: ['owner'] });
      // DNS rebinding: a page on evil.example resolving to 127.0.0.1 sends Host: evil.example.
      const rebound = await new Promise<number>((resolve, reject) => {
        import('node:http').then(({ request }) => {
          const req = request(`${server.url}/api/devices`, { headers: { host: `evil.example:${server.port}` } }, (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          });
          req.on('error', reject);
          req.end();
        }, reject);
      });
      assert.equal(rebound, 403);
    } finally {
      await server.close();
    }
  });

  it('says so when the port is taken', async () => {
    const first = await startHttpServer({ hearth: home.hearth, port: 0 });
    try {
      await assert.rejects(startHttpServer({ hearth: home.hearth, port: first.port }), /already in use: pick another with --http-port 8081 \(or http\.port/);
    } finally {
      await first.close();
    }
  });

  it('serves a mounted handler behind the same Origin and token checks, and closes it with the server', async () => {
    const token = home.hearth.tokens.create('mount-test', 'http:mounter').secret;
    home.hearth.policy.setRoles('http:mounter', ['owner']);
    let closed = false;
    const server = await startHttpServer({
      hearth: home.hearth,
      port: 0,
      mounts: [
        { path: '/mcp', handle: (req, res, principal) => void res.end(JSON.stringify({ path: req.url, principal })), close: () => void (closed = true) },
      ],
    });
    try {
      assert.equal((await fetch(`${server.url}/mcp`)).status, 401);
      assert.equal((await fetch(`${server.url}/mcp`, { headers: { authorization: `Bearer ${token}`, origin: 'http://evil.example' } })).status, 403);
      const ok = await fetch(`${server.url}/mcp/x`, { headers: { authorization: `Bearer ${token}` } });
      assert.deepEqual(await ok.json(), { path: '/mcp/x', principal: { id: 'http:mounter', roles: ['owner'] } });
      assert.equal((await fetch(`${server.url}/mcpx`, { headers: { authorization: `Bearer ${token}` } })).status, 404);
    } finally {
      await server.close();
    }
    assert.ok(closed);
  });

  it('close() ends open event streams', async () => {
    const server = await startHttpServer({ hearth: home.hearth, port: 0, auth: false });
    const res = await fetch(`${server.url}/api/events`, { signal: AbortSignal.timeout(5000) });
    const reader = res.body!.getReader();
    await reader.read();
    // close() resolves with the stream open (it does not wait for the client to hang up), and the stream ends.
    await server.close();
    for (;;) {
      const { done } = await reader.read();
      if (done) break;
    }
  });
});
