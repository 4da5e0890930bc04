// MCP over Streamable HTTP with the SDK's own client, against the handler
// mounted on a plain node:http server, on the demo home (real broker,
// simulator, SQLite).
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  McpError,
  ReadResourceResultSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { parseDeviceFile } from '../../src/devices/loader.js';
import { closeMcpHttp, handleMcpHttp } from '../../src/mcp/http.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { textOf, useMcpHome } from './helpers.js';

describe('MCP over Streamable HTTP', () => {
  const mcp = useMcpHome({ sensorUpdateMs: 300 });
  const home = mcp.home;
  let ownerSecret: string;
  let guestSecret: string;

  async function connect(secret: string | undefined, name = 'test-client'): Promise<Client> {
    const client = mcp.track(new Client({ name, version: '1.0.0' }));
    const transport = new StreamableHTTPClientTransport(mcp.url, {
      requestInit: { headers: secret ? { authorization: `Bearer ${secret}` } : {} },
    });
    await client.connect(transport);
    return client;
  }
  const call = async (client: Client, name: string, args: Record<string, unknown> = {}) => (await client.callTool({ name, arguments: args })) as CallToolResult;

  before(() => {
    ownerSecret = home.hearth.tokens.create('owner-laptop').secret;
    home.hearth.policy.setRoles('http:owner-laptop', ['owner']);
    guestSecret = home.hearth.tokens.create('guest-tablet').secret;
    home.hearth.policy.setRoles('http:guest-tablet', ['guest']);
  });

  it("lists the principal's tools with annotations", async () => {
    const client = await connect(ownerSecret);
    assert.equal(client.getServerVersion()?.name, 'hearth');
    assert.deepEqual(client.getServerCapabilities()?.tools, { listChanged: true });
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    assert.equal(tools.length, 17, '12 device tools, get_state, get_history, get_audit, explain_policy and control_group');
    assert.ok(tools.every((t) => !t.name.startsWith('host__')));
    assert.deepEqual(byName.get('living_room_lamp')?.annotations, {
      title: 'Living room lamp',
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    });
    assert.equal(byName.get('get_state')?.annotations?.readOnlyHint, true);
    assert.equal(byName.get('get_history')?.annotations?.readOnlyHint, true);
    // The audit and the policy (#42): read tools whose text is the answer (no device output schema).
    assert.equal(byName.get('get_audit')?.annotations?.readOnlyHint, true);
    assert.equal(byName.get('get_audit')?.outputSchema, undefined);
    assert.equal(byName.get('explain_policy')?.annotations?.readOnlyHint, true);
    const why = (await client.callTool({ name: 'explain_policy', arguments: { entity: 'front_door.lock', action: 'unlock' } })) as CallToolResult;
    assert.match(textOf(why), /^Policy for unlock on "Front door lock" \(front_door\.lock\), now:\n- /);
    assert.equal(byName.get('front_door_camera')?.annotations?.readOnlyHint, true);
    assert.equal(byName.get('front_door_lock')?.annotations?.destructiveHint, true);
    assert.equal(byName.get('front_door_lock')?.annotations?.idempotentHint, true);
    assert.equal(byName.get('garage_door')?.annotations?.destructiveHint, true);
    assert.equal(byName.get('garage_door')?.annotations?.idempotentHint, false);
    assert.equal(byName.get('thermostat')?.annotations?.destructiveHint, false);
    assert.equal(byName.get('living_room_lamp')?.inputSchema.type, 'object');
  });

  it('calls a read tool and an actuator (confirmed by the device)', async () => {
    const client = await connect(ownerSecret);
    const read = await call(client, 'living_room_temperature');
    assert.ok(!read.isError, textOf(read));
    assert.match(textOf(read), /"Living room temperature" .*°C/);
    const on = await call(client, 'living_room_lamp', { action: 'turn_on' });
    assert.ok(!on.isError, textOf(on));
    assert.match(textOf(on), /^confirmed: "Living room lamp" .*: on; /);
    assert.ok(typeof on._meta?.['hearth/auditId'] === 'number');
    assert.equal(JSON.stringify(on).includes('hearth-demo/'), false, 'no topics (details) reach the client');
    const row = home.hearth.audit.tail(1)[0];
    assert.equal(row.principal, 'http:owner-laptop');
    assert.match(row.requestId, /^mcp:[0-9a-f-]{36}$/);
    assert.match(row.session ?? '', /^mcp:[0-9a-f-]{12}$/);
    assert.equal(row.outcome, 'confirmed');
    const off = await call(client, 'living_room_lamp', { action: 'turn_off' });
    assert.match(textOf(off), /^confirmed: .*: off; /);
  });

  it('returns a camera frame as image content', async () => {
    const client = await connect(ownerSecret);
    const result = await call(client, 'front_door_camera');
    assert.ok(!result.isError, textOf(result));
    assert.match(textOf(result), /^Latest frame from the camera "Front door camera"/);
    const image = result.content.find((c) => c.type === 'image');
    assert.ok(image && image.type === 'image');
    assert.equal(image.mimeType, 'image/jpeg');
    assert.doesNotMatch(image.data, /^data:/);
    const bytes = Buffer.from(image.data, 'base64');
    assert.equal(bytes.toString('base64'), image.data, 'valid base64');
    assert.deepEqual([...bytes.subarray(0, 3)], [0xff, 0xd8, 0xff]);
    assert.deepEqual([...bytes.subarray(-2)], [0xff, 0xd9]);
  });

  it('denies a guest, with the reason, and lists it only what it could ever use', async () => {
    const guest = await connect(guestSecret);
    const names = (await guest.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes('get_state') && names.includes('front_door_camera'), names.join());
    // No rule lets a guest switch anything; the built-in confirm rules (unlock, open) leave those two listable.
    assert.ok(!names.includes('living_room_lamp') && !names.includes('kitchen_light') && !names.includes('thermostat'), names.join());
    const denied = await call(guest, 'living_room_lamp', { action: 'turn_on' });
    assert.equal(denied.isError, true);
    assert.match(textOf(denied), /^not allowed: .*actuators are denied unless a rule allows them/);
    assert.equal(home.hearth.audit.tail(1)[0].outcome, 'denied');
    assert.equal(home.hearth.audit.tail(1)[0].principal, 'http:guest-tablet');
  });

  it('holds a confirm rule for approval; the retried call goes through once granted', async () => {
    const client = await connect(ownerSecret);
    const held = await call(client, 'garage_door', { action: 'open' });
    assert.equal(held.isError, true);
    const text = textOf(held);
    assert.match(text, /^needs approval: .*Approval [0-9a-f]+ is waiting: a person can grant it with `hearth approve [0-9a-f]+`.*make the same call again/);
    const approvalId = held._meta?.['hearth/approvalId'];
    assert.equal(typeof approvalId, 'string');
    assert.ok(text.includes(String(approvalId)));
    // Not yet granted: asking again is held again (same approval).
    const again = await call(client, 'garage_door', { action: 'open' });
    assert.equal(again._meta?.['hearth/approvalId'], approvalId);
    assert.ok(home.hearth.approvals.grant(String(approvalId), 'cli:test'));
    const done = await call(client, 'garage_door', { action: 'open' });
    assert.ok(!done.isError, textOf(done));
    assert.match(textOf(done), /^confirmed: "Garage door" .*open/);
    assert.match(home.hearth.audit.tail(1)[0].reason, new RegExp(`approved: ${approvalId}`));
    const close = await call(client, 'garage_door', { action: 'close' });
    assert.match(textOf(close), /^confirmed/);
  });

  it('names the field at fault for wrong arguments, and unknown tools', async () => {
    const client = await connect(ownerSecret);
    const bad = await call(client, 'kitchen_light', { action: 'turn_on', brightness_pct: 0 });
    assert.equal(bad.isError, true);
    assert.match(textOf(bad), /^invalid arguments: "brightness_pct" must be >= 1 \(got 0\)/);
    const missing = await call(client, 'living_room_lamp', {});
    assert.equal(missing.isError, true);
    assert.match(textOf(missing), /invalid arguments: .*action/);
  });

  it('an unknown tool and malformed params are JSON-RPC errors -32602 with a short message, prefixed once', async () => {
    const client = await connect(ownerSecret);
    const rpcError = (code: number, message: RegExp) => (err: unknown) => {
      assert.ok(err instanceof McpError, String(err));
      assert.equal(err.code, code, err.message);
      assert.match(err.message, message);
      assert.equal(err.message.match(/MCP error/g)?.length, 1, `one prefix: ${err.message}`);
      assert.ok(err.message.length < 200, `short: ${err.message}`);
      return true;
    };
    await assert.rejects(client.callTool({ name: 'toaster', arguments: {} }), rpcError(-32602, /^MCP error -32602: unknown tool "toaster"; tools\/list shows/));
    await assert.rejects(
      client.request({ method: 'tools/call', params: { name: 'living_room_lamp', arguments: 'turn it on' } } as never, CallToolResultSchema),
      rpcError(-32602, /^MCP error -32602: invalid tools\/call params: arguments: /),
    );
    await assert.rejects(
      client.request({ method: 'tools/call', params: { arguments: {} } } as never, CallToolResultSchema),
      rpcError(-32602, /^MCP error -32602: invalid tools\/call params: name: /),
    );
    await assert.rejects(
      client.request({ method: 'resources/read', params: { uri: 42 } } as never, ReadResourceResultSchema),
      rpcError(-32602, /^MCP error -32602: invalid resources\/read params: uri: /),
    );
    await assert.rejects(client.readResource({ uri: 'hearth://entity/toaster' }), rpcError(-32002, /^MCP error -32002: no entity "toaster"/));
  });

  it('a client idempotency key makes a retried call one actuation', async () => {
    const client = await connect(ownerSecret);
    const key = `k-${Date.now()}`;
    const first = (await client.callTool({
      name: 'living_room_lamp',
      arguments: { action: 'turn_on' },
      _meta: { 'hearth/idempotencyKey': key },
    })) as CallToolResult;
    assert.match(textOf(first), /^confirmed/);
    const sent = home.commands().length;
    const retry = (await client.callTool({
      name: 'living_room_lamp',
      arguments: { action: 'turn_on' },
      _meta: { 'hearth/idempotencyKey': key },
    })) as CallToolResult;
    assert.match(textOf(retry), /already handled .*not sent again/);
    await home.caughtUp();
    assert.equal(home.commands().length, sent);
  });

  it('refuses a missing or bad token (401) and a foreign Origin (403)', async () => {
    const init = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    });
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const none = await fetch(mcp.url, { method: 'POST', headers, body: init });
    assert.equal(none.status, 401);
    assert.match(none.headers.get('www-authenticate') ?? '', /^Bearer/);
    assert.match(((await none.json()) as { error: { message: string } }).error.message, /needs a token: create one with `hearth token create/);
    const bad = await fetch(mcp.url, { method: 'POST', headers: { ...headers, authorization: 'Bearer hearth_not-a-real-token' }, body: init });
    assert.equal(bad.status, 401);
    const foreign = await fetch(mcp.url, {
      method: 'POST',
      headers: { ...headers, authorization: `Bearer ${ownerSecret}`, origin: 'https://evil.example' },
      body: init,
    });
    assert.equal(foreign.status, 403);
    assert.match(((await foreign.json()) as { error: { code: string } }).error.code, /forbidden_origin/);
    // The SDK client reports the 401 too.
    await assert.rejects(connect('hearth_wrong'), /401|Unauthorized|not valid/i);
    // Revoked tokens stop working at once.
    const temp = home.hearth.tokens.create('temp').secret;
    home.hearth.policy.setRoles('http:temp', ['owner']);
    const tempClient = await connect(temp);
    home.hearth.tokens.revoke('temp');
    await assert.rejects(tempClient.listTools(), /401|not valid/i);
  });

  it('refuses another principal on a session it did not open', async () => {
    /** A raw tools/list in MCP session `session`, with `secret`. */
    const listToolsIn = (session: string, secret: string, headers: Record<string, string> = {}) =>
      fetch(mcp.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${secret}`,
          'mcp-session-id': session,
          ...headers,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
      });
    const owner = new StreamableHTTPClientTransport(mcp.url, { requestInit: { headers: { authorization: `Bearer ${ownerSecret}` } } });
    const client = new Client({ name: 'owner', version: '1' });
    await client.connect(owner);
    mcp.track(client);
    const res = await listToolsIn(owner.sessionId!, guestSecret, { 'mcp-protocol-version': '2025-06-18' });
    assert.equal(res.status, 403);
    assert.match(await res.text(), /belongs to another principal/);
    const gone = await listToolsIn('no-such-session', ownerSecret);
    assert.equal(gone.status, 404);
  });

  it('sends tools/list_changed and resources/list_changed when a device appears', async () => {
    const earlier = mcp.notificationStreams();
    const client = await connect(ownerSecret);
    const guest = await connect(guestSecret);
    let toolsChanged = 0;
    let resourcesChanged = 0;
    let guestChanged = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void toolsChanged++);
    client.setNotificationHandler(ResourceListChangedNotificationSchema, () => void resourcesChanged++);
    guest.setNotificationHandler(ToolListChangedNotificationSchema, () => void guestChanged++);
    await waitFor("both clients' GET notification streams open", () => [...mcp.notificationStreams()].filter((s) => !earlier.has(s)).length >= 2);
    const parsed = parseDeviceFile(
      'test.yaml',
      [
        'devices:',
        '  - id: porch_plug',
        '    name: Porch plug',
        '    area: Porch',
        '    entities:',
        '      plug:',
        '        kind: switch',
        '        name: Porch plug',
        '        state_topic: test/porch_plug/state',
        '        command_topic: test/porch_plug/set',
        '      power:',
        '        kind: sensor',
        '        name: Porch plug power',
        '        unit: W',
        '        state_topic: test/porch_plug/power',
      ].join('\n'),
    );
    assert.ok('devices' in parsed, JSON.stringify(parsed));
    home.hearth.bridge.registry.setSource('test', 5, parsed.devices);
    await waitFor('tools/list_changed', () => toolsChanged > 0, 5000);
    await waitFor('resources/list_changed', () => resourcesChanged > 0, 5000);
    const { tools } = await client.listTools();
    const plug = tools.find((t) => t.name === 'porch_plug');
    assert.ok(plug, tools.map((t) => t.name).join());
    assert.equal(plug.annotations?.idempotentHint, true);
    const { resources } = await client.listResources();
    assert.ok(resources.some((r) => r.uri === 'hearth://entity/porch_plug.plug'));
    // The guest sees a new read tool (the power sensor), so it hears about it too.
    await waitFor('guest list_changed', () => guestChanged > 0, 5000);
    assert.ok((await guest.listTools()).tools.some((t) => t.name === 'porch_plug_power'));
    // The same set again is no change.
    const before = toolsChanged;
    home.hearth.bridge.registry.setSource('test', 5, parsed.devices);
    await sleep(300);
    assert.equal(toolsChanged, before);
    home.hearth.bridge.registry.setSource('test', 5, []);
    await waitFor('list_changed after removal', () => toolsChanged > before, 5000);
    assert.ok(!(await client.listTools()).tools.some((t) => t.name === 'porch_plug'));
  });

  it('serves entity state and camera frames as resources, with update subscriptions', async () => {
    const client = await connect(ownerSecret);
    assert.deepEqual(client.getServerCapabilities()?.resources, { subscribe: true, listChanged: true });
    const { resources } = await client.listResources();
    const lamp = resources.find((r) => r.uri === 'hearth://entity/living_room_lamp.lamp');
    assert.ok(lamp);
    assert.equal(lamp.mimeType, 'application/json');
    assert.equal(lamp.title, 'Living room lamp');
    const frame = resources.find((r) => r.uri === 'hearth://camera/front_door.camera/frame');
    assert.ok(frame);
    assert.equal(frame.mimeType, 'image/jpeg');
    const { resourceTemplates } = await client.listResourceTemplates();
    assert.ok(resourceTemplates.some((t) => t.uriTemplate === 'hearth://entity/{id}'));

    const image = await client.readResource({ uri: 'hearth://camera/front_door.camera/frame' });
    const blob = image.contents[0];
    assert.ok('blob' in blob);
    assert.equal(blob.mimeType, 'image/jpeg');
    assert.deepEqual([...Buffer.from(blob.blob, 'base64').subarray(0, 3)], [0xff, 0xd8, 0xff]);

    const updated: string[] = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updated.push(n.params.uri));
    await client.subscribeResource({ uri: 'hearth://entity/living_room_lamp.lamp' });
    const state = async () => {
      const r = await client.readResource({ uri: 'hearth://entity/living_room_lamp.lamp' });
      const c = r.contents[0];
      assert.ok('text' in c);
      assert.equal(c.mimeType, 'application/json');
      return JSON.parse(c.text) as { id: string; value: unknown; available: boolean };
    };
    const start = await state();
    assert.equal(start.id, 'living_room_lamp.lamp');
    const target = start.value === 'on' ? 'turn_off' : 'turn_on';
    assert.match(textOf(await call(client, 'living_room_lamp', { action: target })), /^confirmed/);
    await waitFor('resources/updated for the lamp', () => updated.includes('hearth://entity/living_room_lamp.lamp'), 5000);
    assert.equal((await state()).value, target === 'turn_on' ? 'on' : 'off');
    // Not subscribed: no updates for it.
    assert.ok(!updated.some((u) => u.includes('kitchen_light')));
    await client.unsubscribeResource({ uri: 'hearth://entity/living_room_lamp.lamp' });
    const count = updated.length;
    await call(client, 'living_room_lamp', { action: target === 'turn_on' ? 'turn_off' : 'turn_on' });
    // A resource still subscribed changes after it: its update comes after any the lamp's change would have sent.
    const marker = 'hearth://entity/living_room_climate.temperature';
    await client.subscribeResource({ uri: marker });
    const cache = home.hearth.bridge.cache;
    cache.emit('change', cache.get('living_room_climate.temperature')!, home.hearth.bridge.registry.entity('living_room_climate.temperature')!);
    await waitFor('the marker resource updated', () => updated.includes(marker), 5000);
    assert.equal(updated.filter((u) => u.includes('living_room_lamp')).length, count);

    await assert.rejects(client.readResource({ uri: 'hearth://entity/toaster' }), /no entity "toaster"/);
    await assert.rejects(client.readResource({ uri: 'https://example.org/' }), /unknown resource/);
  });

  it('throttles sensor updates per resource', async () => {
    const client = await connect(ownerSecret);
    const updated: string[] = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updated.push(n.params.uri));
    const uri = 'hearth://entity/living_room_climate.temperature';
    await client.subscribeResource({ uri });
    await sleep(100);
    const cache = home.hearth.bridge.cache;
    const entity = home.hearth.bridge.registry.entity('living_room_climate.temperature')!;
    updated.length = 0;
    for (let i = 0; i < 10; i++) cache.emit('change', cache.get(entity.id)!, entity);
    await sleep(150);
    const early = updated.filter((u) => u === uri).length;
    assert.ok(early <= 1, `at most one at once, got ${early}`);
    await sleep(400); // the throttle in this test is 300 ms
    const later = updated.filter((u) => u === uri).length;
    assert.ok(later >= 1 && later <= 2, `one leading and at most one trailing update, got ${later}`);
  });

  it('handleMcpHttp serves the principal the HTTP server authenticated', async () => {
    // As Hearth's HTTP server mounts it: auth done by the server, principal passed in.
    const server = createServer((req, res) => {
      if (req.url?.startsWith('/mcp')) void handleMcpHttp(req, res, { hearth: home.hearth, principal: { id: 'http:local', roles: ['owner'] } });
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const client = new Client({ name: 'mounted', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`)));
      assert.equal((await client.listTools()).tools.length, 17);
      const on = (await client.callTool({ name: 'living_room_lamp', arguments: { action: 'turn_on' } })) as CallToolResult;
      assert.match(textOf(on), /^confirmed/);
      assert.equal(home.hearth.audit.tail(1)[0].principal, 'http:local');
      await closeMcpHttp(home.hearth);
      await assert.rejects(client.listTools(), /404|Session not found/);
      await client.close();
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('closes a session on DELETE', async () => {
    const transport = new StreamableHTTPClientTransport(mcp.url, { requestInit: { headers: { authorization: `Bearer ${ownerSecret}` } } });
    const client = new Client({ name: 'short', version: '1' });
    await client.connect(transport);
    const count = mcp.listener.handler.sessionCount;
    await transport.terminateSession();
    await waitFor('session gone', () => mcp.listener.handler.sessionCount === count - 1, 3000);
    await client.close();
  });
});
