// Issue 15, finding 6: a read deny holds at every door. A guest denied `read`
// on front_door.* must not see the front door in GET /api/devices, in the
// /api/events stream, in MCP resources or tools/list, in a camera frame, or
// through a Node-RED device node; an owner still sees all of it. Real broker
// (aedes), real SQLite, real HTTP server with MCP mounted, real MCP client.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import mqtt, { type MqttClient } from 'mqtt';
import { McpHttpHandler } from '../../src/mcp/http.js';
import { startHttpServer, type HttpServer } from '../../src/http/server.js';
import { BridgeController } from '../../nodes/lib/bridge.js';
import { DeviceController } from '../../nodes/lib/device.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { startHome, type TestHome } from '../helpers/home.js';
import { waitFor } from '../helpers/wait.js';

interface SseEvent {
  event: string;
  data: any;
}

/** Server-sent events from a fetch response, collected as they arrive. */
function collect(res: Response): { events: SseEvent[]; done: Promise<void>; cancel(): Promise<void> } {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const events: SseEvent[] = [];
  let buffer = '';
  const done = (async () => {
    for (;;) {
      const chunk = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (chunk.done) return;
      buffer += decoder.decode(chunk.value, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let event = 'message';
        let data: string | undefined;
        for (const line of block.split('\n')) {
          if (line.startsWith('event: ')) event = line.slice(7);
          else if (line.startsWith('data: ')) data = line.slice(6);
        }
        if (data !== undefined) events.push({ event, data: JSON.parse(data) });
      }
    }
  })();
  return { events, done, cancel: () => reader.cancel().catch(() => undefined) };
}

describe('security: a read deny holds at every surface', () => {
  let broker: TestBroker;
  let home: TestHome;
  let server: HttpServer;
  let mcp: McpHttpHandler;
  let publisher: MqttClient;
  let ownerToken: string;
  let guestToken: string;
  const clients: Client[] = [];

  async function get(path: string, token: string) {
    const res = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(10_000) });
    return { status: res.status, json: (await res.json()) as any };
  }

  async function mcpClient(token: string): Promise<Client> {
    const client = new Client({ name: 'read-deny-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
    clients.push(client);
    return client;
  }

  before(async () => {
    broker = await startAedes();
    home = await startHome(broker);
    mcp = new McpHttpHandler({ hearth: home.hearth });
    server = await startHttpServer({
      hearth: home.hearth,
      host: '127.0.0.1',
      port: 0,
      log: home.logs.log.child({ part: 'http' }),
      mounts: [{ path: '/mcp', handle: (req, res, principal) => mcp.handle(req, res, principal), close: () => mcp.close() }],
    });
    ownerToken = home.hearth.tokens.create('owner-phone', 'http:owner').secret;
    home.hearth.policy.setRoles('http:owner', ['owner']);
    guestToken = home.hearth.tokens.create('guest-tablet', 'http:guest').secret;
    home.hearth.policy.setRoles('http:guest', ['guest']);
    home.hearth.policy.add({
      subject: 'role:guest',
      targetType: 'entity',
      target: 'front_door.*',
      action: 'read',
      effect: 'deny',
      note: 'test: guests do not see the front door',
    });
    publisher = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
  });
  after(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await publisher?.endAsync(true).catch(() => undefined);
    await server?.close();
    await home?.close();
    await broker?.stop();
  });

  it('GET /api/devices leaves out what the guest may not read; the owner sees it', async () => {
    const guest = await get('/api/devices', guestToken);
    assert.equal(guest.status, 200);
    const guestIds = guest.json.map((e: { id: string }) => e.id);
    assert.ok(guestIds.includes('living_room_lamp.lamp'), guestIds.join(', '));
    assert.deepEqual(
      guestIds.filter((id: string) => id.startsWith('front_door.')),
      [],
    );
    const owner = await get('/api/devices', ownerToken);
    const ownerIds = owner.json.map((e: { id: string }) => e.id);
    assert.ok(ownerIds.includes('front_door.lock') && ownerIds.includes('front_door.camera'), ownerIds.join(', '));
  });

  it('GET /api/devices/:id/frame refuses the denied camera', async () => {
    const guest = await get('/api/devices/front_door.camera/frame', guestToken);
    assert.equal(guest.status, 403);
    assert.match(guest.json.error.message, /not allowed to read front_door\.camera.*guests do not see the front door/);
  });

  it('GET /api/events sends the guest no state of a denied entity, and says how many it may see', async () => {
    const open = (token: string) => fetch(`${server.url}/api/events`, { headers: { authorization: `Bearer ${token}` } });
    const guest = collect(await open(guestToken));
    const owner = collect(await open(ownerToken));
    await waitFor('both streams ready', () => guest.events.some((e) => e.event === 'ready') && owner.events.some((e) => e.event === 'ready'));
    const visible = (await get('/api/devices', guestToken)).json.length;
    assert.equal(guest.events.find((e) => e.event === 'ready')!.data.entities, visible);
    // The lock reports a state first, then the lamp: once the guest has the lamp's, it would have had the lock's.
    await publisher.publishAsync('hearth-demo/front_door/lock', 'unlocked');
    await publisher.publishAsync('hearth-demo/living_room_lamp/state', home.hearth.bridge.cache.get('living_room_lamp.lamp')?.value === 'on' ? 'OFF' : 'ON');
    const lampSeen = (s: { events: SseEvent[] }) => s.events.some((e) => e.event === 'state' && e.data.id === 'living_room_lamp.lamp');
    await waitFor('the lamp state on both streams', () => lampSeen(guest) && lampSeen(owner));
    assert.ok(
      owner.events.some((e) => e.event === 'state' && e.data.id === 'front_door.lock'),
      'the owner sees the lock',
    );
    assert.deepEqual(
      guest.events.filter((e) => JSON.stringify(e.data).includes('front_door')),
      [],
    );
    await guest.cancel();
    await owner.cancel();
  });

  it('MCP resources, reads and tools/list refuse the denied entity to the guest', async () => {
    const guest = await mcpClient(guestToken);
    const { resources } = await guest.listResources();
    assert.ok(resources.length > 0);
    assert.deepEqual(
      resources.filter((r) => r.uri.includes('front_door')),
      [],
    );
    await assert.rejects(guest.readResource({ uri: 'hearth://entity/front_door.lock' }), /not allowed/);
    await assert.rejects(guest.subscribeResource({ uri: 'hearth://camera/front_door.camera/frame' }), /not allowed/);
    const { tools } = await guest.listTools();
    assert.deepEqual(
      tools.filter((t) => t.name.startsWith('front_door')).map((t) => t.name),
      [],
    );
    // Not named in any tool's schema either: get_state's and get_history's entity enums leave it out (issue 27).
    const named = tools.filter((t) => JSON.stringify(t.inputSchema).includes('front_door'));
    assert.deepEqual(
      named.map((t) => t.name),
      [],
    );
    const getState = tools.find((t) => t.name === 'get_state')!;
    assert.ok(((getState.inputSchema.properties as any).entity.enum as string[]).includes('kitchen_light.light'), 'what it may read is still there');
    const owner = await mcpClient(ownerToken);
    assert.ok((await owner.listResources()).resources.some((r) => r.uri === 'hearth://entity/front_door.lock'));
  });

  it("the agent's own system prompt names only what the guest may read", async () => {
    const agent = await home.hearth.agent();
    const guest = await agent.open({ principal: { id: 'http:guest', roles: ['guest'] }, ephemeral: true });
    const owner = await agent.open({ principal: { id: 'http:owner', roles: ['owner'] }, ephemeral: true });
    const prompt = (s: unknown) => (s as { systemPrompt: string }).systemPrompt;
    assert.match(prompt(owner), /"Entrance": cameras, locks/);
    // The Entrance is still there for the guest (its siren), without the front door's lock and camera.
    assert.doesNotMatch(prompt(guest), /: cameras|locks/);
    assert.match(prompt(guest), /"Entrance": sirens/);
    assert.match(prompt(guest), /"Living room":/);
    await agent.close(guest.id).catch(() => undefined);
    await agent.close(owner.id).catch(() => undefined);
  });

  it('a Node-RED device node refuses the denied read, and its errors name no tool it may not use', async () => {
    const bridge = new BridgeController(async () => home.hearth as never);
    const guest = new DeviceController(bridge, { nodeId: 'guest-node', roles: ['guest'] });
    await assert.rejects(
      guest.read('front_door.lock'),
      (err: Error & { code?: string }) => err.code === 'denied' && /guests do not see the front door/.test(err.message),
    );
    const lamp = await guest.read('living_room_lamp.lamp');
    assert.equal(lamp.entity.id, 'living_room_lamp.lamp');
    await assert.rejects(guest.call('no_such_tool', {}), (err: Error) => /unknown tool/.test(err.message) && !err.message.includes('front_door'));
    guest.close();
  });
});
