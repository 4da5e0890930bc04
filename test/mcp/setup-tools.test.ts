// `hearth mcp --setup`: an agent helping an owner set up the home, through the MCP SDK's own client over stdio
// against a running `hearth start` (the demo home): the owner is offered the setup tools and moves a device to
// another area; a guest is neither offered them nor let through when it calls one by name; without --setup nobody
// is offered them; bad input (an area nobody has, hostile text) is a failed result naming what was wrong.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { freePort } from '../helpers/brokers.js';
import { HEARTH, runHearth, spawnHearth, type Spawned } from '../helpers/cli.js';
import { textOf } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-mcp-setup-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('hearth mcp --setup', () => {
  let port: number;
  let bridge: Spawned;
  const db = join(dir, 'h.db');
  const common = () => ['--broker-port', String(port), '--db', db];
  const clients: Client[] = [];

  async function open(extra: string[]): Promise<Client> {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [HEARTH, 'mcp', ...common(), ...extra],
      cwd: dir,
      env: { ...(process.env as Record<string, string>), HEARTH_LOG_PRETTY: 'false' },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'setup-test', version: '1.0.0' });
    clients.push(client);
    await client.connect(transport);
    return client;
  }
  const call = async (client: Client, name: string, args: Record<string, unknown>) =>
    (await client.callTool({ name, arguments: args }, undefined, { timeout: 30_000 })) as CallToolResult;
  const names = async (client: Client) => (await client.listTools()).tools.map((t) => t.name);

  before(async () => {
    port = await freePort();
    bridge = spawnHearth(['start', ...common(), '--set', 'http.port=0'], { cwd: dir });
    await bridge.waitForOutput('Press Ctrl+C to stop.', 20_000);
  });
  after(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await bridge?.stop();
  });

  it('offers an owner the setup tools, and moves a device to another area with them', async () => {
    const owner = await open(['--setup']);
    const listed = await names(owner);
    for (const n of ['hearth_home_areas', 'hearth_home_set_area', 'hearth_home_rename_device', 'hearth_home_set_aliases', 'hearth_home_expose'])
      assert.ok(listed.includes(n), `${n} in ${listed.join(', ')}`);
    const areas = textOf(await call(owner, 'hearth_home_areas', {}));
    assert.match(areas, /"Kitchen"/);
    const moved = await call(owner, 'hearth_home_set_area', { device: 'kitchen_light', area: 'Living room' });
    assert.ok(!moved.isError, textOf(moved));
    assert.match(textOf(moved), /in "Living room"/);
    const devices = await runHearth(['devices', '--json', ...common()], { cwd: dir });
    const device = (JSON.parse(devices.stdout) as Array<{ id: string; area: string; areaFrom: string }>).find((d) => d.id === 'kitchen_light')!;
    assert.deepEqual([device.area, device.areaFrom], ['Living room', 'person']);
    // One entity apart from its device: the living room's humidity reading in the kitchen.
    const apart = await call(owner, 'hearth_home_set_area', { device: 'living_room_climate.humidity', area: 'Kitchen' });
    assert.ok(!apart.isError, textOf(apart));
    assert.match(textOf(apart), /^Done: living_room_climate\.humidity is in "Kitchen", apart from its device\./);
    const after = await runHearth(['devices', '--json', ...common()], { cwd: dir });
    const climate = (JSON.parse(after.stdout) as Array<{ id: string; area: string; entities: Array<{ id: string; area: string }> }>).find(
      (d) => d.id === 'living_room_climate',
    )!;
    assert.equal(climate.area, 'Living room');
    assert.equal(climate.entities.find((e) => e.id === 'living_room_climate.humidity')!.area, 'Kitchen');
    assert.equal(climate.entities.find((e) => e.id === 'living_room_climate.temperature')!.area, 'Living room');
  });

  it('answers bad input as a failed result naming what was wrong', async () => {
    const owner = await open(['--setup']);
    const missing = await call(owner, 'hearth_home_set_area', { device: 'kitchen_light', area: 'Attic' });
    assert.equal(missing.isError, true);
    assert.match(textOf(missing), /no area "Attic".*hearth areas add "Attic"/);
    const hostile = await call(owner, 'hearth_home_rename_device', { device: 'kitchen_light', name: '\u0000\u202e' });
    assert.equal(hostile.isError, true);
    assert.match(textOf(hostile), /^failed: name: /);
    const typed = await call(owner, 'hearth_home_set_aliases', { device: 'kitchen_light', aliases: 'not a list' });
    assert.equal(typed.isError, true);
    assert.match(textOf(typed), /aliases: must be a list/);
  });

  it('offers a guest nothing, and refuses one that calls a setup tool by name', async () => {
    const guest = await open(['--setup', '--as', 'chat:visitor', '--role', 'guest']);
    assert.ok(!(await names(guest)).some((n) => n.startsWith('hearth_home_')));
    const refused = await call(guest, 'hearth_home_set_area', { device: 'kitchen_light', area: 'Kitchen' });
    assert.equal(refused.isError, true);
    assert.match(textOf(refused), /only an owner may arrange the home.*ask an owner/);
    const devices = await runHearth(['devices', '--json', ...common()], { cwd: dir });
    assert.equal((JSON.parse(devices.stdout) as Array<{ id: string; area: string }>).find((d) => d.id === 'kitchen_light')!.area, 'Living room');
  });

  it('offers no one the setup tools without --setup', async () => {
    const owner = await open([]);
    assert.ok(!(await names(owner)).some((n) => n.startsWith('hearth_home_')));
    const r = await owner.callTool({ name: 'hearth_home_areas', arguments: {} }).catch((err: Error) => err);
    assert.ok(r instanceof Error || (r as CallToolResult).isError, 'an unknown tool');
  });
});
