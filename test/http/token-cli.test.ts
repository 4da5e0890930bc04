// `hearth token create|list|revoke` as a user runs them (the built dist/:
// run `npx tsc -p tsconfig.json` first), against a running `hearth start`
// that serves the HTTP API.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { freePort } from '../helpers/brokers.js';
import { runHearth } from '../helpers/cli.js';
import { useHearthStart } from '../helpers/use-hearth-start.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-token-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('hearth token with hearth start', () => {
  const hearth = useHearthStart(dir);

  const get = (path: string, token?: string) =>
    fetch(`http://127.0.0.1:${hearth.httpPort}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {}, signal: AbortSignal.timeout(10_000) });

  it('prints where the API listens', () => {
    assert.match(
      hearth.bridge.stdout(),
      // The token command runs as printed here (no `hearth` on PATH, not the checkout): node and the script.
      new RegExp(
        `http +http://127\\.0\\.0\\.1:${hearth.httpPort}  \\(web page and API, MCP at /mcp; token: node \\S+/dist/cli/main\\.js token create <name> --role owner --db \\S+ --broker-port \\d+\\)`,
      ),
    );
  });

  it('creates a token whose secret (shown once) works against the running bridge; list never shows it; revoke ends it', async () => {
    assert.equal((await get('/api/devices')).status, 401);

    const created = await runHearth(['token', 'create', 'phone', '--role', 'owner', '--db', hearth.db], { cwd: dir });
    assert.equal(created.code, 0, created.stderr);
    const secret = /hearth_[A-Za-z0-9_-]+/.exec(created.stdout)?.[0];
    assert.ok(secret, created.stdout);
    assert.match(created.stdout, /created token phone for http:phone \(roles: owner\)/);
    assert.match(created.stdout, /not shown again/);

    const devices = await get('/api/devices', secret);
    assert.equal(devices.status, 200, await devices.clone().text());
    assert.equal(((await devices.json()) as unknown[]).length, 11);

    // The token's principal is an owner, so the demo rule lets it switch the lamp.
    const session = await fetch(`http://127.0.0.1:${hearth.httpPort}/api/sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: '{}',
      signal: AbortSignal.timeout(10_000),
    });
    assert.equal(session.status, 201, await session.clone().text());
    const { id } = (await session.json()) as { id: string };
    const answer = await fetch(`http://127.0.0.1:${hearth.httpPort}/api/sessions/${id}/prompt?stream=false`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'turn on the living room lamp' }),
      signal: AbortSignal.timeout(15_000),
    });
    const raw = await answer.text();
    const turn = JSON.parse(raw) as { stopReason: string; toolCalls: Array<{ result: string }>; auditIds: number[] };
    assert.equal(turn.stopReason, 'completed', raw);
    assert.match(turn.toolCalls[0]?.result ?? '', /^confirmed/, raw);
    assert.equal(turn.auditIds.length, 1, raw);

    const dup = await runHearth(['token', 'create', 'phone', '--db', hearth.db], { cwd: dir });
    assert.equal(dup.code, 2, dup.stderr);
    assert.match(dup.stderr, /exists already/);

    const list = await runHearth(['token', 'list', '--db', hearth.db], { cwd: dir });
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /phone +http:phone +owner/);
    assert.ok(!list.stdout.includes(secret));
    const json = await runHearth(['token', 'list', '--json', '--db', hearth.db], { cwd: dir });
    assert.ok(!json.stdout.includes(secret));
    const phone = (JSON.parse(json.stdout) as Array<{ name: string; lastUsedAt: string | null }>).find((t) => t.name === 'phone');
    assert.ok(phone?.lastUsedAt, json.stdout);

    const revoked = await runHearth(['token', 'revoke', 'phone', '--db', hearth.db], { cwd: dir });
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.match(revoked.stdout, /revoked token phone/);
    assert.equal((await get('/api/devices', secret)).status, 401, 'a revoked token is refused');
    const again = await runHearth(['token', 'revoke', 'phone', '--db', hearth.db], { cwd: dir });
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already revoked/);
  });

  it('serves MCP over Streamable HTTP at /mcp of hearth start, with the same tokens', async () => {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const created = await runHearth(['token', 'create', 'jan', '--role', 'owner', '--db', hearth.db], { cwd: dir });
    const secret = /hearth_[A-Za-z0-9_-]+/.exec(created.stdout)![0];
    const url = new URL(`http://127.0.0.1:${hearth.httpPort}/mcp`);
    const refused = new Client({ name: 'test', version: '1' });
    await assert.rejects(refused.connect(new StreamableHTTPClientTransport(url)), /401|unauthorized/i);
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${secret}` } } }));
    try {
      const { tools } = await client.listTools();
      assert.ok(tools.some((t) => t.name === 'living_room_lamp'));
      const res = (await client.callTool({ name: 'living_room_lamp', arguments: { action: 'turn_off' } })) as {
        content: Array<{ text: string }>;
        isError?: boolean;
      };
      assert.equal(res.isError ?? false, false);
      assert.match(res.content[0].text, /^confirmed/);
      const tail = await runHearth(['audit', 'tail', '--json', '--db', hearth.db], { cwd: dir });
      const last = (JSON.parse(tail.stdout) as Array<{ principal: string; tool: string }>).at(-1)!;
      assert.deepEqual([last.principal, last.tool], ['http:jan', 'living_room_lamp']);
    } finally {
      await client.close();
    }
  });

  it("streams an approval that another process's call asked for, at once", async () => {
    const created = await runHearth(['token', 'create', 'watcher', '--role', 'owner', '--db', hearth.db], { cwd: dir });
    const secret = /hearth_[A-Za-z0-9_-]+/.exec(created.stdout)![0];
    const events = await fetch(`http://127.0.0.1:${hearth.httpPort}/api/events`, {
      headers: { authorization: `Bearer ${secret}` },
      signal: AbortSignal.timeout(20_000),
    });
    assert.equal(events.status, 200);
    const reader = events.body!.getReader();
    let seen = '';
    const until = async (re: RegExp) => {
      while (!re.test(seen)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended before ${re}: ${seen.slice(-500)}`);
        seen += Buffer.from(value).toString('utf8');
      }
    };
    await until(/event: ready/);
    // `hearth call` is its own process: opening the garage is held for a person, even for an owner.
    const call = await runHearth(['call', 'garage_door', '{"action":"open"}', '--broker-port', String(hearth.brokerPort), '--db', hearth.db], { cwd: dir });
    const id = /Approval ([0-9a-f]+) is waiting/.exec(call.stdout + call.stderr)?.[1];
    assert.ok(id, call.stdout + call.stderr);
    // Without the server watching other processes, no event would ever come (the page only polls).
    await until(new RegExp(`event: approval\\ndata: \\{"event":"requested","id":"${id}"`));
    await reader.cancel();
  });

  it('--principal names the principal; a bad one or a bad role is refused and no token is made', async () => {
    const ok = await runHearth(['token', 'create', 'kiosk', '--principal', 'http:kiosk', '--role', 'guest', '--db', hearth.db], { cwd: dir });
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /for http:kiosk \(roles: guest\)/);
    const badPrincipal = await runHearth(['token', 'create', 'x1', '--principal', 'nobody', '--db', hearth.db], { cwd: dir });
    assert.equal(badPrincipal.code, 2);
    assert.match(badPrincipal.stderr, /--principal "nobody"/);
    const badRole = await runHearth(['token', 'create', 'x2', '--role', 'own er', '--db', hearth.db], { cwd: dir });
    assert.equal(badRole.code, 2);
    assert.match(badRole.stderr, /--role/);
    const list = await runHearth(['token', 'list', '--json', '--db', hearth.db], { cwd: dir });
    const names = (JSON.parse(list.stdout) as Array<{ name: string }>).map((t) => t.name);
    assert.ok(!names.includes('x1') && !names.includes('x2'), names.join(','));
  });
});

describe('hearth start with http.auth false', () => {
  it('refuses it on a non-loopback host with a configuration error', async () => {
    const port = await freePort();
    const { code, stderr } = await runHearth(
      ['start', '--broker-port', String(port), '--db', join(dir, 'open.db'), '--set', 'http.auth=false', '--set', 'http.host=0.0.0.0', '--set', 'http.port=0'],
      { cwd: dir, timeoutMs: 20_000 },
    );
    assert.equal(code, 2);
    assert.match(stderr, /configuration error: .*http\.auth: false is allowed only when http\.host is a loopback address/);
  });
});
