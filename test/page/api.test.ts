// The routes the web page needs, in-process on a real demo home (aedes,
// simulator, SQLite): the audit log (list, one row, verify, export), the
// policy (rules, test), camera frames, and the page's static files.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startHttpServer, type HttpServer } from '../../src/http/server.js';
import { PAGE_DIR, PAGE_MODULES } from '../../src/http/page.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { ROOT } from '../helpers/cli.js';
import { startHome, type TestHome } from '../helpers/home.js';

describe('web page API routes', () => {
  let broker: TestBroker;
  let home: TestHome;
  let server: HttpServer;
  let base: string;
  let ownerToken: string;
  let guestToken: string;
  let guestRow: number;

  async function api(path: string, options: { token?: string | null; method?: string; body?: unknown; headers?: Record<string, string> } = {}) {
    const headers: Record<string, string> = { ...options.headers };
    const token = options.token === undefined ? ownerToken : options.token;
    if (token) headers.authorization = `Bearer ${token}`;
    let body: string | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] = 'application/json';
    }
    const res = await fetch(`${base}${path}`, { method: options.method ?? (body ? 'POST' : 'GET'), headers, body, signal: AbortSignal.timeout(10_000) });
    const bytes = Buffer.from(await res.arrayBuffer());
    const text = bytes.toString('utf8');
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, json, text, bytes, headers: res.headers };
  }

  before(async () => {
    broker = await startAedes();
    home = await startHome(broker);
    server = await startHttpServer({ hearth: home.hearth, host: '127.0.0.1', port: 0, log: home.logs.log.child({ part: 'http' }) });
    base = server.url;
    ownerToken = home.hearth.tokens.create('owner-phone', 'http:owner').secret;
    home.hearth.policy.setRoles('http:owner', ['owner']);
    guestToken = home.hearth.tokens.create('guest-tablet', 'http:guest').secret;
    home.hearth.policy.setRoles('http:guest', ['guest']);
    home.hearth.policy.add({
      subject: 'role:guest',
      targetType: 'entity',
      target: 'kitchen_light.light',
      action: 'actuate',
      effect: 'allow',
      note: 'test: guests may switch the kitchen light',
    });
    home.hearth.policy.add({
      subject: 'role:guest',
      targetType: 'entity',
      target: 'front_door.camera',
      action: 'read',
      effect: 'deny',
      priority: 10,
      note: 'test: guests may not look',
    });
    // Three rows: the owner's lamp (confirmed), the guest's kitchen light (confirmed), the guest's lock (denied).
    const owner = { id: 'http:owner', roles: ['owner'] };
    const guest = { id: 'http:guest', roles: ['guest'] };
    assert.match((await home.hearth.tools.call('living_room_lamp', { action: 'turn_on' }, owner)).text ?? '', /^confirmed/);
    assert.match((await home.hearth.tools.call('kitchen_light', { action: 'turn_on' }, guest)).text ?? '', /^confirmed/);
    assert.match((await home.hearth.tools.call('front_door_lock', { action: 'unlock' }, guest)).text ?? '', /not allowed|needs approval/);
    guestRow = home.hearth.audit.list({ principal: 'http:guest', limit: 1 })[0].id;
  });
  after(async () => {
    await server?.close();
    await home?.close();
    await broker?.stop();
  });

  describe('GET /api/audit', () => {
    it('needs a token', async () => {
      assert.equal((await api('/api/audit', { token: null })).status, 401);
      assert.equal((await api('/api/audit/verify', { token: null })).status, 401);
      assert.equal((await api('/api/audit/1', { token: null })).status, 401);
    });

    it('gives an owner every row, newest first, filtered by principal, entity, outcome and time', async () => {
      const all = await api('/api/audit');
      assert.equal(all.status, 200, all.text);
      assert.equal(all.json.length, 3);
      assert.ok(all.json[0].id > all.json[2].id, 'newest first');
      const asc = await api('/api/audit?order=asc');
      assert.deepEqual(
        asc.json.map((r: { id: number }) => r.id),
        [...all.json.map((r: { id: number }) => r.id)].reverse(),
      );

      const guest = await api('/api/audit?principal=http:guest');
      assert.equal(guest.json.length, 2);
      assert.ok(guest.json.every((r: { principal: string }) => r.principal === 'http:guest'));
      const lamp = await api('/api/audit?entity=living_room_lamp.lamp&outcome=confirmed');
      assert.equal(lamp.json.length, 1);
      assert.equal(lamp.json[0].action, 'turn_on');
      assert.deepEqual(lamp.json[0].args, { action: 'turn_on' });
      const denied = await api('/api/audit?outcome=denied');
      assert.deepEqual(
        denied.json.map((r: { entityId: string }) => r.entityId),
        ['front_door.lock'],
      );

      const future = await api(`/api/audit?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`);
      assert.deepEqual(future.json, []);
      const past = await api(`/api/audit?until=${encodeURIComponent('2000-01-01T00:00:00Z')}`);
      assert.deepEqual(past.json, []);
      const epoch = await api(`/api/audit?since=${Date.now() - 600_000}`);
      assert.equal(epoch.json.length, 3);

      // One row per call; a call's outcome is an entry of its own, so call ids are not contiguous.
      const first = all.json[2].id as number;
      const second = all.json[1].id as number;
      const after = await api(`/api/audit?afterId=${first}&order=asc&limit=1`);
      assert.equal(after.json.length, 1);
      assert.equal(after.json[0].id, second);
      const older = await api(`/api/audit?beforeId=${second}`);
      assert.deepEqual(
        older.json.map((r: { id: number }) => r.id),
        [first],
      );
    });

    it('gives anyone else only their own rows; asking for another principal is refused', async () => {
      const mine = await api('/api/audit', { token: guestToken });
      assert.equal(mine.status, 200);
      assert.equal(mine.json.length, 2);
      assert.ok(mine.json.every((r: { principal: string }) => r.principal === 'http:guest'));
      const theirs = await api('/api/audit?principal=http:owner', { token: guestToken });
      assert.equal(theirs.status, 403);
      assert.match(theirs.json.error.message, /only an owner/);
    });

    it('400s a bad filter, naming it', async () => {
      for (const [query, field] of [
        ['outcome=maybe', 'outcome'],
        ['limit=0', 'limit'],
        ['limit=5000', 'limit'],
        ['afterId=-1', 'afterId'],
        ['since=yesterday-ish', 'since'],
        ['order=sideways', 'order'],
      ]) {
        const r = await api(`/api/audit?${query}`);
        assert.equal(r.status, 400, query);
        assert.equal(r.json.error.field, field, query);
      }
    });

    it('GET /api/audit/:id: an owner reads any row; anyone else only their own (else 404)', async () => {
      const row = await api(`/api/audit/${guestRow}`);
      assert.equal(row.status, 200);
      assert.equal(row.json.id, guestRow);
      assert.equal(row.json.principal, 'http:guest');
      assert.equal((await api(`/api/audit/${guestRow}`, { token: guestToken })).status, 200);
      const ownerRow = home.hearth.audit.list({ principal: 'http:owner', limit: 1 })[0].id;
      assert.equal((await api(`/api/audit/${ownerRow}`, { token: guestToken })).status, 404);
      assert.equal((await api('/api/audit/99999')).status, 404);
      assert.equal((await api('/api/audit/abc')).status, 404);
    });

    it('GET /api/audit/verify: the chain checks out (details for owners only)', async () => {
      const v = await api('/api/audit/verify');
      assert.equal(v.status, 200);
      assert.equal(v.json.ok, true);
      // rows: the entries of the chain (3 calls, and the outcome entries of the 2 that were sent).
      assert.equal(v.json.rows, 5);
      assert.equal(v.json.pending, 0);
      const g = await api('/api/audit/verify', { token: guestToken });
      assert.deepEqual(g.json, { ok: true });
    });

    it('GET /api/audit/export: JSON lines or CSV as a download, for owners', async () => {
      const jsonl = await api('/api/audit/export?format=jsonl');
      assert.equal(jsonl.status, 200);
      assert.match(jsonl.headers.get('content-type') ?? '', /^application\/x-ndjson/);
      assert.match(jsonl.headers.get('content-disposition') ?? '', /^attachment; filename="hearth-audit-.+\.jsonl"$/);
      const lines = jsonl.text
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l));
      assert.equal(lines.length, 3);
      assert.deepEqual(
        lines.map((l) => l.id),
        home.hearth.audit.list({ limit: 10 }).map((r) => r.id),
      );

      const csv = await api('/api/audit/export?format=csv');
      assert.equal(csv.status, 200);
      assert.match(csv.headers.get('content-type') ?? '', /^text\/csv/);
      assert.match(csv.text, /^id,at,request_id,principal,/);
      assert.equal(csv.text.trimEnd().split('\n').length, 4);

      const none = await api(`/api/audit/export?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`);
      assert.equal(none.text, '');
      const bad = await api('/api/audit/export?format=xml');
      assert.equal(bad.status, 400);
      assert.equal(bad.json.error.field, 'format');
      const guest = await api('/api/audit/export', { token: guestToken });
      assert.equal(guest.status, 403);
    });
  });

  describe('policy', () => {
    it('GET /api/policy/rules: every rule in words, the principals and the tools, for owners', async () => {
      const r = await api('/api/policy/rules');
      assert.equal(r.status, 200, r.text);
      const garage = r.json.rules.find((x: { effect: string; description: string }) => x.effect === 'confirm' && /garage/.test(x.description));
      assert.ok(garage, r.text);
      assert.equal(garage.builtin, true);
      assert.ok(r.json.principals.some((p: { id: string; roles: string[] }) => p.id === 'http:guest' && p.roles.includes('guest')));
      const tool = r.json.tools.find((t: { name: string }) => t.name === 'garage_door');
      assert.deepEqual(tool.entities, ['garage_door.door']);
      assert.equal(tool.capability, 'actuator');
      assert.equal((await api('/api/policy/rules', { token: guestToken })).status, 403);
    });

    it('POST /api/policy/test explains a call: decision and every rule considered', async () => {
      const r = await api('/api/policy/test', { body: { principal: 'http:guest', tool: 'garage_door', args: { action: 'open' } } });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.principal.id, 'http:guest');
      assert.deepEqual(r.json.principal.roles, ['guest']);
      assert.equal(r.json.action, 'open');
      assert.equal(r.json.entityId, 'garage_door.door');
      assert.equal(r.json.decision.effect, 'deny', 'a guest no rule allows is denied; the built-in confirm only escalates an allow');
      const decided = r.json.rules.filter((c: { decided: boolean }) => c.decided);
      assert.equal(decided.length, 1);
      assert.equal(decided[0].id, r.json.decision.ruleId);
      assert.ok(r.json.rules.every((c: { why: string }) => typeof c.why === 'string' && c.why.length > 0));

      // The caller by default; host__ names too.
      const own = await api('/api/policy/test', { body: { tool: 'host__living_room_lamp', args: { action: 'turn_on' } } });
      assert.equal(own.json.principal.id, 'http:owner');
      assert.equal(own.json.decision.effect, 'allow');
      // A read is allowed by default; the camera rule denies guests.
      const look = await api('/api/policy/test', { body: { principal: 'http:guest', tool: 'front_door_camera' } });
      assert.equal(look.json.decision.effect, 'deny');
    });

    it('a non-owner may test only its own calls, and sees the decision without the table', async () => {
      const own = await api('/api/policy/test', { token: guestToken, body: { tool: 'kitchen_light', args: { action: 'turn_on' } } });
      assert.equal(own.status, 200);
      assert.equal(own.json.decision.effect, 'allow');
      assert.equal(own.json.rules, undefined);
      const other = await api('/api/policy/test', { token: guestToken, body: { principal: 'http:owner', tool: 'kitchen_light', args: {} } });
      assert.equal(other.status, 403);
    });

    it('400s bad input and 404s an unknown tool', async () => {
      assert.equal((await api('/api/policy/test', { body: { tool: 'no_such_tool' } })).status, 404);
      const noTool = await api('/api/policy/test', { body: {} });
      assert.equal(noTool.status, 400);
      assert.equal(noTool.json.error.field, 'tool');
      const badArgs = await api('/api/policy/test', { body: { tool: 'garage_door', args: [1] } });
      assert.equal(badArgs.json.error.field, 'args');
      const badAt = await api('/api/policy/test', { body: { tool: 'garage_door', at: 'teatime' } });
      assert.equal(badAt.json.error.field, 'at');
      const extra = await api('/api/policy/test', { body: { tool: 'garage_door', rule: 1 } });
      assert.equal(extra.json.error.field, 'rule');
      const badPrincipal = await api('/api/policy/test', { body: { tool: 'garage_door', principal: 'role:*' } });
      assert.equal(badPrincipal.json.error.field, 'principal');
    });
  });

  describe('GET /api/devices/:id/frame', () => {
    it("answers the camera's latest frame as the camera sent it", async () => {
      const frame = home.hearth.bridge.cache.get('front_door.camera')!.frame!;
      const r = await api('/api/devices/front_door.camera/frame');
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('content-type'), frame.contentType);
      assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
      assert.ok(r.headers.get('x-frame-at'));
      assert.ok(r.bytes.length > 100);
      assert.equal(r.bytes[0], 0xff, 'a JPEG starts with FF D8');
      assert.equal(r.bytes[1], 0xd8);
      const etag = r.headers.get('etag')!;
      const again = await api('/api/devices/front_door.camera/frame', { headers: { 'if-none-match': etag } });
      // 304 unless a new frame came in between.
      assert.ok(again.status === 304 || (again.status === 200 && again.headers.get('etag') !== etag), String(again.status));
    });

    it('needs a token and the read permission; 404s what is no camera', async () => {
      assert.equal((await api('/api/devices/front_door.camera/frame', { token: null })).status, 401);
      const guest = await api('/api/devices/front_door.camera/frame', { token: guestToken });
      assert.equal(guest.status, 404, 'as a camera that is not there');
      assert.equal(guest.json.error.message, 'no entity "front_door.camera" that you may read; GET /api/devices lists them');
      const lamp = await api('/api/devices/living_room_lamp.lamp/frame');
      assert.equal(lamp.status, 404);
      assert.match(lamp.json.error.message, /not a camera/);
      assert.equal((await api('/api/devices/nope/frame')).status, 404);
    });
  });

  describe('the page files', () => {
    it('are served without a token, with a strict CSP, from the package root', async () => {
      const index = await api('/', { token: null });
      assert.equal(index.status, 200);
      assert.match(index.headers.get('content-type') ?? '', /^text\/html/);
      assert.equal(index.text, readFileSync(join(PAGE_DIR, 'index.html'), 'utf8'));
      assert.equal(PAGE_DIR, join(ROOT, 'src', 'http', 'page'));
      const csp = index.headers.get('content-security-policy') ?? '';
      assert.match(csp, /default-src 'self'/);
      assert.match(csp, /script-src 'self'(;|$)/);
      assert.match(csp, /frame-ancestors 'none'/);
      assert.equal(index.headers.get('x-content-type-options'), 'nosniff');
      const js = await api('/app.js', { token: null });
      assert.equal(js.status, 200);
      assert.match(js.headers.get('content-type') ?? '', /^text\/javascript/);
      // Every module app.js imports, directly or not, is served the same way (the browser needs each one).
      const imported = new Set<string>();
      const follow = (file: string) => {
        if (imported.has(file)) return;
        imported.add(file);
        for (const m of readFileSync(join(PAGE_DIR, file), 'utf8').matchAll(/ from '\.\/([\w-]+\.js)';/g)) follow(m[1]);
      };
      follow('app.js');
      assert.deepEqual([...imported].sort(), [...PAGE_MODULES].sort(), 'the served modules are those app.js imports');
      for (const file of imported) {
        const res = await api(`/${file}`, { token: null });
        assert.equal(res.status, 200, file);
        assert.match(res.headers.get('content-type') ?? '', /^text\/javascript/, file);
        assert.equal(res.headers.get('content-security-policy'), csp, file);
        assert.ok(readFileSync(join(PAGE_DIR, file), 'utf8').split('\n').length < 400, `${file} stays under 400 lines`);
      }
      const css = await api('/style.css', { token: null });
      assert.match(css.headers.get('content-type') ?? '', /^text\/css/);
      const icon = await api('/icon.svg', { token: null });
      assert.match(icon.headers.get('content-type') ?? '', /^image\/svg\+xml/);
      // Revalidation.
      const etag = js.headers.get('etag')!;
      assert.equal((await api('/app.js', { token: null, headers: { 'if-none-match': etag } })).status, 304);
      // Nothing else is served from the folder.
      assert.equal((await api('/../package.json', { token: null })).status, 404);
      assert.equal((await api('/page.ts', { token: null })).status, 404);
    });

    it('reference nothing outside this origin', () => {
      for (const file of ['index.html', 'style.css', ...PAGE_MODULES]) {
        const text = readFileSync(join(PAGE_DIR, file), 'utf8');
        assert.doesNotMatch(text, /(src|href)=["']https?:|url\(["']?https?:|@import|fetch\(["']https?:/, file);
      }
    });
  });
});
