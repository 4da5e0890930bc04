// `hearth mcp` as an MCP client starts it: the SDK's own client spawns the
// real process (built dist/) against a running `hearth start`, over stdio.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  ElicitRequestSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type ClientCapabilities,
} from '@modelcontextprotocol/sdk/types.js';
import { freePort } from '../helpers/brokers.js';
import { HEARTH, runHearth, spawnHearth, type Spawned } from '../helpers/cli.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { textOf } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-mcp-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('hearth mcp over stdio', () => {
  let port: number;
  let bridge: Spawned;
  const db = join(dir, 'h.db');
  const common = () => ['--broker-port', String(port), '--db', db];
  const opened: Array<{ client: Client; transport: StdioClientTransport; stderr: () => string; errors: Error[] }> = [];

  async function open(extraArgs: string[] = [], env: Record<string, string> = {}, capabilities: ClientCapabilities = {}) {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [HEARTH, 'mcp', ...common(), ...extraArgs],
      cwd: dir,
      env: { ...(process.env as Record<string, string>), HEARTH_LOG_PRETTY: 'false', ...env },
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (d: Buffer) => (stderr += d));
    const errors: Error[] = [];
    const client = new Client({ name: 'stdio-test', version: '1.0.0' }, { capabilities });
    client.onerror = (err) => errors.push(err);
    const entry = { client, transport, stderr: () => stderr, errors };
    opened.push(entry);
    await client.connect(transport);
    return entry;
  }
  const call = async (client: Client, name: string, args: Record<string, unknown> = {}) =>
    (await client.callTool({ name, arguments: args }, undefined, { timeout: 30_000 })) as CallToolResult;

  before(async () => {
    port = await freePort();
    bridge = spawnHearth(['start', ...common(), '--set', 'http.port=0'], { cwd: dir });
    await bridge.waitForOutput('Press Ctrl+C to stop.', 20_000);
  });
  after(async () => {
    for (const o of opened) await o.client.close().catch(() => undefined);
    await bridge?.stop();
  });

  it('lists the tools with annotations, and keeps stdout to the protocol', async () => {
    const { client, errors, stderr } = await open();
    assert.equal(client.getServerVersion()?.name, 'hearth');
    assert.match(client.getInstructions() ?? '', /approval/);
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    assert.equal(tools.length, 17, '12 device tools, get_state, get_history, get_audit, explain_policy and control_group');
    assert.equal(byName.get('get_state')?.annotations?.readOnlyHint, true);
    assert.equal(byName.get('living_room_lamp')?.annotations?.readOnlyHint, false);
    assert.equal(byName.get('living_room_lamp')?.annotations?.idempotentHint, true);
    assert.equal(byName.get('front_door_lock')?.annotations?.destructiveHint, true);
    assert.equal(byName.get('garage_door')?.annotations?.destructiveHint, true);
    assert.equal(byName.get('kitchen_light')?.annotations?.destructiveHint, false);
    assert.deepEqual(errors, [], stderr());
  });

  it('calls a read tool, the lamp and the camera', async () => {
    const { client, errors } = await open();
    const state = await call(client, 'get_state', { area: 'Living room' });
    assert.ok(!state.isError, textOf(state));
    assert.match(textOf(state), /"Living room lamp"/);
    assert.match(textOf(state), /"Living room temperature" .*°C/);
    const on = await call(client, 'living_room_lamp', { action: 'turn_on' });
    assert.match(textOf(on), /^confirmed: "Living room lamp" .*: on; /);
    const camera = await call(client, 'front_door_camera');
    assert.ok(!camera.isError, textOf(camera));
    const image = camera.content.find((c) => c.type === 'image');
    assert.ok(image && image.type === 'image');
    assert.equal(image.mimeType, 'image/jpeg');
    const bytes = Buffer.from(image.data, 'base64');
    assert.equal(bytes.toString('base64'), image.data);
    assert.deepEqual([...bytes.subarray(0, 3)], [0xff, 0xd8, 0xff]);
    const off = await call(client, 'living_room_lamp', { action: 'turn_off' });
    assert.match(textOf(off), /^confirmed: .*: off; /);
    const audit = await runHearth(['audit', 'tail', '-n', '1', '--json', ...common()], { cwd: dir });
    assert.match(audit.stdout, /"requestId": "mcp:[0-9a-f-]{36}"/);
    assert.deepEqual(errors, []);
  });

  it('says what is wrong with wrong arguments', async () => {
    const { client } = await open();
    const bad = await call(client, 'kitchen_light', { action: 'turn_on', brightness_pct: 0 });
    assert.equal(bad.isError, true);
    assert.match(textOf(bad), /^invalid arguments: "brightness_pct" must be >= 1 \(got 0\)/);
    const wrongAction = await call(client, 'living_room_lamp', { action: 'explode' });
    assert.equal(wrongAction.isError, true);
    assert.match(textOf(wrongAction), /invalid arguments: "action" must be one of/);
  });

  it('denies a principal from HEARTH_PRINCIPAL that may not act, with the reason', async () => {
    const { client } = await open([], { HEARTH_PRINCIPAL: 'chat:visitor' });
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(!names.includes('living_room_lamp'), names.join());
    const denied = await call(client, 'living_room_lamp', { action: 'turn_on' });
    assert.equal(denied.isError, true);
    assert.match(textOf(denied), /^not allowed: .*actuators are denied unless a rule allows them/);
    const audit = await runHearth(['audit', 'tail', '-n', '1', '--json', ...common()], { cwd: dir });
    assert.match(audit.stdout, /"principal": "chat:visitor"/);
    assert.match(audit.stdout, /"outcome": "denied"/);
  });

  it('refuses a malformed --as before speaking MCP', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [HEARTH, 'mcp', ...common(), '--as', 'root'],
      cwd: dir,
      env: process.env as Record<string, string>,
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (d: Buffer) => (stderr += d));
    const client = new Client({ name: 'bad', version: '1' });
    await assert.rejects(client.connect(transport, { timeout: 15_000 }));
    await waitFor('the error on stderr', () => /--as "root": a principal looks like/.test(stderr), 5000);
    await client.close().catch(() => undefined);
  });

  it('holds the garage for approval; `hearth approve` lets the retried call through', async () => {
    const { client } = await open();
    const held = await call(client, 'garage_door', { action: 'open' });
    assert.equal(held.isError, true);
    assert.match(textOf(held), /^needs approval: .*`hearth approve [0-9a-f]+`/);
    const id = String(held._meta?.['hearth/approvalId']);
    assert.match(id, /^[0-9a-f]+$/);
    const approved = await runHearth(['approve', id, ...common()], { cwd: dir });
    assert.equal(approved.code, 0, approved.stderr);
    const done = await call(client, 'garage_door', { action: 'open' });
    assert.ok(!done.isError, textOf(done));
    assert.match(textOf(done), /^confirmed: "Garage door" .*open/);
    // Used once: the next open needs a new approval.
    const close = await call(client, 'garage_door', { action: 'close' });
    assert.match(textOf(close), /^confirmed/);
  });

  it('titles, structured reads, resource links, completions, and an approval asked in the client (elicitation)', async () => {
    const { client } = await open([], {}, { elicitation: {} });
    const asked: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, (req) => {
      asked.push(String(req.params.message));
      return { action: 'accept', content: { approve: true } };
    });
    const { tools } = await client.listTools();
    const getState = tools.find((t) => t.name === 'get_state')!;
    assert.equal(getState.title, 'Get state');
    assert.equal(getState.outputSchema?.type, 'object');
    const state = await call(client, 'get_state', { entity: 'garage_door.door' });
    assert.deepEqual(
      (state.structuredContent as { entities: Array<{ id: string }> }).entities.map((e) => e.id),
      ['garage_door.door'],
    );
    const ids = await client.complete({ ref: { type: 'ref/resource', uri: 'hearth://entity/{id}' }, argument: { name: 'id', value: 'garage' } });
    assert.deepEqual(ids.completion.values, ['garage_door.door']);

    // The person at the client is the owner: their yes grants the approval, and the garage opens.
    const open_ = await call(client, 'garage_door', { action: 'open' });
    assert.equal(asked.length, 1);
    assert.match(asked[0], /asks to run garage_door/);
    assert.ok(!open_.isError, textOf(open_));
    assert.match(textOf(open_), /^confirmed: "Garage door" .*open/);
    assert.ok(open_.content.some((c) => c.type === 'resource_link' && c.uri === 'hearth://entity/garage_door.door'));
    const audit = await runHearth(['audit', 'tail', '-n', '1', '--json', ...common()], { cwd: dir });
    assert.match(audit.stdout, /"outcome": "confirmed"/);
    assert.match(audit.stdout, /"reason": ".*\(approved: [0-9a-f]+\)"/);
    assert.match(textOf(await call(client, 'garage_door', { action: 'close' })), /^confirmed/);
  });

  it('serves resources and sends updates for a subscribed entity', async () => {
    const { client } = await open();
    const { resources } = await client.listResources();
    assert.ok(resources.some((r) => r.uri === 'hearth://entity/living_room_lamp.lamp'));
    assert.ok(resources.some((r) => r.uri === 'hearth://camera/front_door.camera/frame'));
    const updated: string[] = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updated.push(n.params.uri));
    const uri = 'hearth://entity/living_room_lamp.lamp';
    await client.subscribeResource({ uri });
    const before = JSON.parse(((await client.readResource({ uri })).contents[0] as { text: string }).text) as { value: string };
    const action = before.value === 'on' ? 'turn_off' : 'turn_on';
    assert.match(textOf(await call(client, 'living_room_lamp', { action })), /^confirmed/);
    await waitFor('resources/updated', () => updated.includes(uri), 5000);
    const after = JSON.parse(((await client.readResource({ uri })).contents[0] as { text: string }).text) as { value: string };
    assert.equal(after.value, action === 'turn_on' ? 'on' : 'off');
  });

  it('announces tools/list_changed when a device file is added while it runs', async () => {
    const mine = join(dir, 'my-devices');
    mkdirSync(mine, { recursive: true });
    const { client } = await open(['--devices', mine]);
    let changed = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed++);
    assert.ok(!(await client.listTools()).tools.some((t) => t.name === 'attic_temperature'));
    writeFileSync(
      join(mine, 'attic.yaml'),
      // A sensor: reads are allowed to everyone, so the tool is in every principal's list.
      'devices:\n  - id: attic\n    name: Attic\n    entities:\n      temperature: { kind: sensor, name: Attic temperature, unit: °C, state_topic: mcp-test/attic/temperature }\n',
    );
    const deadline = Date.now() + 5000;
    let names: string[] = [];
    while (!names.includes('attic_temperature') && Date.now() < deadline) {
      await sleep(100);
      names = (await client.listTools()).tools.map((t) => t.name);
    }
    assert.ok(names.includes('attic_temperature'), `the new tool is listed: ${names.join(', ')}`);
    assert.ok(changed > 0, 'the client was told the list changed');
  });

  it('announces tools/list_changed when a policy rule made in another process changes what the principal may use', async () => {
    const { client } = await open([], { HEARTH_PRINCIPAL: 'chat:lodger' });
    let changed = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed++);
    assert.ok(!(await client.listTools()).tools.some((t) => t.name === 'living_room_lamp'));
    const allow = await runHearth(['policy', 'allow', 'chat:lodger', '--entity', 'living_room_lamp.lamp', '--json', ...common()], { cwd: dir });
    assert.equal(allow.code, 0, allow.stderr);
    const { rule } = JSON.parse(allow.stdout) as { rule: { id: number } };
    await waitFor('tools/list_changed after the rule', () => changed > 0, 10_000);
    assert.ok((await client.listTools()).tools.some((t) => t.name === 'living_room_lamp'));
    const seen = changed;
    const removed = await runHearth(['policy', 'remove', String(rule.id), ...common()], { cwd: dir });
    assert.equal(removed.code, 0, removed.stderr);
    await waitFor('tools/list_changed after the removal', () => changed > seen, 10_000);
    assert.ok(!(await client.listTools()).tools.some((t) => t.name === 'living_room_lamp'));
  });

  it('exits when the client closes', async () => {
    const { client, transport } = await open();
    const pid = transport.pid!;
    assert.ok(pid > 0);
    await client.close();
    await waitFor(
      'hearth mcp exited',
      () => {
        try {
          process.kill(pid, 0);
          return false;
        } catch {
          return true;
        }
      },
      5000,
    );
    await sleep(10);
  });
});
