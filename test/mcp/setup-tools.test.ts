// `hearth mcp --setup`: an agent helping an owner set up the home, through the MCP SDK's own client over stdio
// against a running `hearth start` (the demo home): the owner is offered the setup tools and moves a device to
// another area; a guest is neither offered them nor let through when it calls one by name; without --setup nobody
// is offered them; bad input (an area nobody has, hostile text, an alias another area has) is a failed result naming
// what was wrong. Areas and floors are added, given aliases and removed with them as with `hearth areas|floors`.
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
  const cliJson = async <T>(args: string[]): Promise<T> => {
    const r = await runHearth([...args, '--json', ...common()], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as T;
  };
  type AreaRow = { name: string; floor: string | null; aliases: string[] };
  type FloorRow = { name: string; level: number | null; aliases: string[]; areas: string[] };
  const areaNamed = async (name: string) => (await cliJson<AreaRow[]>(['areas'])).find((a) => a.name === name);
  const floorNamed = async (name: string) => (await cliJson<FloorRow[]>(['floors'])).find((f) => f.name === name);

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
    for (const n of [
      'hearth_home_areas',
      'hearth_home_set_area',
      'hearth_home_rename_device',
      'hearth_home_set_aliases',
      'hearth_home_expose',
      'hearth_home_area',
      'hearth_home_remove_area',
      'hearth_home_floor',
      'hearth_home_remove_floor',
    ])
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

  it('adds a floor and an area with aliases, finds them by alias, changes and removes them', async () => {
    const owner = await open(['--setup']);
    const floor = await call(owner, 'hearth_home_floor', { floor: 'Upstairs', create: true, level: 1, aliases: ['first floor'] });
    assert.ok(!floor.isError, textOf(floor));
    assert.match(textOf(floor), /^Done: "Upstairs" \(level 1\), also called "first floor": no areas\./);
    // The floor by its alias; the area found again by its own.
    const area = await call(owner, 'hearth_home_area', { area: 'Bedroom', create: true, floor: 'first floor', aliases: ['sleeping room'] });
    assert.ok(!area.isError, textOf(area));
    assert.match(textOf(area), /^Done: "Bedroom" on "Upstairs", also called "sleeping room": 0 device\(s\)\./);
    const renamed = await call(owner, 'hearth_home_area', { area: 'sleeping room', aliases: ['master bedroom', 'our room'] });
    assert.ok(!renamed.isError, textOf(renamed));
    assert.deepEqual(await areaNamed('Bedroom'), { ...(await areaNamed('Bedroom'))!, floor: 'Upstairs', aliases: ['master bedroom', 'our room'] });
    assert.deepEqual((await floorNamed('Upstairs'))!.areas, ['Bedroom']);
    const listed = textOf(await call(owner, 'hearth_home_areas', {}));
    assert.match(listed, /^"Bedroom" on "Upstairs", also called "master bedroom", "our room": 0 device\(s\)$/m);
    assert.match(listed, /^Floors:\n"Upstairs" \(level 1\), also called "first floor": "Bedroom"$/m);

    // A device a person put in the area goes back to its source's area when the area is removed.
    assert.ok(!(await call(owner, 'hearth_home_set_area', { device: 'siren', area: 'our room' })).isError);
    const removed = await call(owner, 'hearth_home_remove_area', { area: 'master bedroom' });
    assert.ok(!removed.isError, textOf(removed));
    assert.match(textOf(removed), /^Done: removed the area "Bedroom"; 1 device\(s\) placed there by a person went back/);
    assert.equal(await areaNamed('Bedroom'), undefined);
    const siren = (await cliJson<Array<{ id: string; area: string; areaFrom: string }>>(['devices'])).find((d) => d.id === 'siren')!;
    assert.deepEqual([siren.area, siren.areaFrom], ['Entrance', 'source']);
    const gone = await call(owner, 'hearth_home_remove_floor', { floor: 'first floor' });
    assert.ok(!gone.isError, textOf(gone));
    assert.match(textOf(gone), /^Done: removed the floor "Upstairs"; 0 area\(s\) on it/);
    assert.equal(await floorNamed('Upstairs'), undefined);
  });

  it('refuses an unknown area, an alias another area or floor has, and hostile aliases; an over-long one is capped', async () => {
    const owner = await open(['--setup']);
    const unknown = await call(owner, 'hearth_home_remove_area', { area: 'Attic' });
    assert.equal(unknown.isError, true);
    assert.match(textOf(unknown), /^failed: area: no area "Attic"/);
    const unknownToo = await call(owner, 'hearth_home_area', { area: 'Attic', aliases: ['loft'] });
    assert.equal(unknownToo.isError, true);
    assert.match(textOf(unknownToo), /no area "Attic"/);
    const noFloor = await call(owner, 'hearth_home_remove_floor', { floor: 'Cellar' });
    assert.equal(noFloor.isError, true);
    assert.match(textOf(noFloor), /^failed: floor: no floor "Cellar"/);

    // "living room" would name two areas: refused, and the kitchen keeps what it had.
    const before = (await areaNamed('Kitchen'))!.aliases;
    const taken = await call(owner, 'hearth_home_area', { area: 'Kitchen', aliases: ['cooking', 'Living Room'] });
    assert.equal(taken.isError, true);
    assert.match(textOf(taken), /^failed: aliases: "Living Room" already names the area "Living room"/);
    assert.deepEqual((await areaNamed('Kitchen'))!.aliases, before);
    assert.ok(!(await call(owner, 'hearth_home_area', { area: 'Garage', aliases: ['workshop'] })).isError);
    const another = await call(owner, 'hearth_home_area', { area: 'Shed', create: true, aliases: ['Workshop'] });
    assert.equal(another.isError, true);
    assert.match(textOf(another), /"Workshop" already names the area "Garage"/);
    assert.equal(await areaNamed('Shed'), undefined, 'nothing added');
    assert.ok(!(await call(owner, 'hearth_home_floor', { floor: 'Ground floor', create: true, aliases: ['downstairs'] })).isError);
    const floorTaken = await call(owner, 'hearth_home_floor', { floor: 'Basement', create: true, aliases: ['Downstairs'] });
    assert.equal(floorTaken.isError, true);
    assert.match(textOf(floorTaken), /"Downstairs" already names the floor "Ground floor"/);

    // Nothing to say is refused naming the alias; control characters are taken out; a long alias is capped.
    const control = await call(owner, 'hearth_home_area', { area: 'Garage', aliases: ['\u0000\u202e\u0007'] });
    assert.equal(control.isError, true);
    assert.match(textOf(control), /^failed: aliases\[0\]: .* has no letters or digits to say/);
    const long = `Car port${'!'.repeat(300)}`;
    const cleaned = await call(owner, 'hearth_home_area', { area: 'Garage', aliases: ['Den\u0007\u202e', long] });
    assert.ok(!cleaned.isError, textOf(cleaned));
    const [den, carPort] = (await areaNamed('Garage'))!.aliases;
    assert.equal(den, 'Den');
    assert.ok(carPort!.startsWith('Car port') && carPort!.length <= 60, carPort);
    const many = await call(owner, 'hearth_home_area', { area: 'Garage', aliases: Array.from({ length: 11 }, (_, i) => `garage ${i}`) });
    assert.equal(many.isError, true);
    assert.match(textOf(many), /aliases: at most 10 aliases, got 11/);
    const level = await call(owner, 'hearth_home_floor', { floor: 'Ground floor', level: 'high' });
    assert.equal(level.isError, true);
    assert.match(textOf(level), /^failed: level: must be a whole number/);
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
    // Nor may it change or remove areas and floors.
    for (const [name, args] of [
      ['hearth_home_remove_area', { area: 'Kitchen' }],
      ['hearth_home_area', { area: 'Kitchen', aliases: ['mine'] }],
      ['hearth_home_floor', { floor: 'Loft', create: true }],
      ['hearth_home_remove_floor', { floor: 'Ground floor' }],
    ] as const) {
      const r = await call(guest, name, args);
      assert.equal(r.isError, true, name);
      assert.match(textOf(r), /^not allowed: only an owner may arrange the home/, name);
    }
    assert.ok(await areaNamed('Kitchen'));
    assert.ok(await floorNamed('Ground floor'));
    assert.equal(await floorNamed('Loft'), undefined);
  });

  it('offers no one the setup tools without --setup', async () => {
    const owner = await open([]);
    assert.ok(!(await names(owner)).some((n) => n.startsWith('hearth_home_')));
    const r = await owner.callTool({ name: 'hearth_home_areas', arguments: {} }).catch((err: Error) => err);
    assert.ok(r instanceof Error || (r as CallToolResult).isError, 'an unknown tool');
  });
});
