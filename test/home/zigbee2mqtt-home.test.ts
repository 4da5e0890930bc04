// A person's first hour with a Zigbee2MQTT home, as a user runs it: mosquitto, a simulated Zigbee2MQTT publishing
// the fixture home (test/fixtures/homes/zigbee2mqtt-home.json: fifteen zigbee-herdsman-converters models named
// `Living room/Ceiling light`, `Kitchen spots` and an untouched `0x00158d0004a1b2c3`), `hearth start` on it, and
// the CLI and the HTTP API setting areas, names and exposure: kept across a rename in Zigbee2MQTT and a restart,
// refused to a guest, and hostile or clashing input refused without changing anything.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runHearth } from '../helpers/cli.js';
import { request } from '../helpers/http-client.js';
import { waitFor } from '../helpers/wait.js';
import { useZigbee2mqttDaemon } from '../helpers/zigbee2mqtt-daemon.js';
import { Z2M_HOME, type HomeDeviceJson } from '../helpers/zigbee2mqtt-home.js';

const { CEILING, SPOTS, CONTACT, MOTION, RADIATOR, BEDSIDE, DESK_PLUG } = Z2M_HOME;

describe('a Zigbee2MQTT home on mosquitto, arranged from the CLI and the HTTP API', () => {
  const home = useZigbee2mqttDaemon('z2m-home');
  const { dir, common } = home;
  const cli = async (args: string[]) => runHearth([...args, ...common()], { cwd: dir });
  const devices = async (): Promise<HomeDeviceJson[]> => {
    const r = await cli(['devices', '--json']);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as HomeDeviceJson[];
  };
  const find = (list: HomeDeviceJson[], id: string) => list.find((d) => d.id === id)!;

  it('the banner says how to let owners act and how to set areas, as commands that run as printed', async () => {
    const out = home.daemon.stdout();
    // The command as this checkout runs it (`node .../main.js` until `npm link`), with the flags of this home.
    // Where the devices came from: discovery, not "nowhere".
    assert.match(out, /devices\s+16 devices, \d+ entities from zigbee2mqtt discovery\n/);
    const allow = /^\s+\S+(?: \S+main\.js)? (policy allow role:owner --capability actuator --action actuate .*)$/m.exec(out);
    assert.ok(allow, out);
    assert.match(out, /areas\s+2 of 16 devices have no area \(1 with a suggestion\): \S+(?: \S+main\.js)? devices area /);
    // Before the rule an owner's call is refused, naming the command that allows it.
    const refused = await cli(['call', 'living_room_ceiling_light', '{"action":"turn_off"}']);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stdout + refused.stderr, /To allow it: hearth policy allow role:owner --entity living_room_ceiling_light\.light --action turn_off/);
    const args = allow[1]!.split(/\s+/);
    const added = await runHearth(args, { cwd: dir });
    assert.equal(added.code, 0, added.stderr);
    const on = await cli(['call', 'living_room_ceiling_light', '{"action":"turn_off"}']);
    assert.equal(on.code, 0, on.stderr + on.stdout);
    assert.match(on.stdout, /confirmed/);
    assert.equal(home.sim.state('Living room/Ceiling light')?.state, 'OFF');
  });

  it('`hearth devices` shows NAME and AREA: a name within its area, never a topic path', async () => {
    const r = await cli(['devices']);
    assert.equal(r.code, 0, r.stderr);
    const [head] = r.stdout.split('\n').filter((l) => l.startsWith('NAME'));
    assert.match(head!, /^NAME\s+AREA\s+KIND/);
    const ceiling = r.stdout.split('\n').find((l) => l.startsWith('Ceiling light '));
    assert.match(ceiling!, /^Ceiling light\s+Living room\s+light/);
    assert.doesNotMatch(r.stdout, /Living room\/Ceiling light/);
    const list = await devices();
    assert.equal(find(list, CEILING).areaFrom, 'source');
    assert.equal(find(list, SPOTS).area, null);
    assert.equal(find(list, SPOTS).suggestedArea, 'Kitchen');
    assert.equal(find(list, CONTACT).name, '0x00158d0004a1b2c3');
  });

  it('config and diagnostic entities are not tools; exposing a device grows the tool set, --reset shrinks it back', async () => {
    const tools = async () => {
      const r = await cli(['tools', '--json']);
      assert.equal(r.code, 0, `exit ${r.code}: ${r.stderr}`);
      return JSON.parse(r.stdout).tools as Array<{ name: string; spec: unknown }>;
    };
    const before = await tools();
    const names = before.map((t) => t.name);
    assert.ok(!names.some((n) => /power_on_behavior|identify|battery|device_temperature|color_options|outage/.test(n)), names.join(', '));
    const list = await devices();
    const hidden = list.flatMap((d) => d.entities).filter((e) => !e.exposed);
    assert.ok(hidden.length >= 25, `${hidden.length} hidden`);
    const shown = await cli(['devices', 'expose', 'Living room/Remote']);
    assert.equal(shown.code, 0, shown.stderr);
    const more = await tools();
    assert.ok(JSON.stringify(more).length > JSON.stringify(before).length);
    assert.ok(more.some((t) => t.name.startsWith('living_room_remote')));
    const reset = await cli(['devices', 'expose', 'Living room/Remote', '--reset']);
    assert.equal(reset.code, 0, reset.stderr);
    assert.deepEqual(
      (await tools()).map((t) => t.name),
      names,
    );
  });

  it('the CLI sets an area; one nobody has is refused naming `hearth areas add`, unless --create', async () => {
    const placed = await cli(['devices', 'area', 'Kitchen spots', 'Kitchen']);
    assert.equal(placed.code, 0, placed.stderr);
    assert.match(placed.stdout, /Kitchen spots \(kitchen_spots\): Kitchen/);
    const missing = await cli(['devices', 'area', '0x00158d0004a1b2c3', 'Front door']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no area "Front door".*hearth areas add "Front door"/);
    assert.equal(find(await devices(), CONTACT).area, null);
    const created = await cli(['devices', 'area', '0x00158d0004a1b2c3', 'Front door', '--create']);
    assert.equal(created.code, 0, created.stderr);
    assert.equal(find(await devices(), CONTACT).area, 'Front door');
  });

  it('the HTTP API sets an area for an owner; a guest is refused and nothing changes; hostile names are cleaned', async () => {
    const url = `${home.base}/api/home/devices/${encodeURIComponent(MOTION)}`;
    const denied = await request(url, { method: 'POST', token: home.guest, body: { area: 'Garage', create: true } });
    assert.equal(denied.status, 403);
    assert.match(denied.json.error.message, /only an owner/);
    const exposeDenied = await request(`${home.base}/api/home/entities/${encodeURIComponent(`${CEILING}.power_on_behavior`)}`, {
      method: 'POST',
      token: home.guest,
      body: { exposed: true },
    });
    assert.equal(exposeDenied.status, 403);
    assert.equal(find(await devices(), MOTION).area, 'Hallway');
    const hostile = `Garage\u202e\u0000${'!'.repeat(300)}`;
    const ok = await request(url, { method: 'POST', token: home.owner, body: { area: hostile, create: true } });
    assert.equal(ok.status, 200, ok.text);
    assert.ok(ok.json.area.length <= 60 && ok.json.area.startsWith('Garage') && !/[\u0000\u202e]/.test(ok.json.area), ok.json.area);
    const bad = await request(url, { method: 'POST', token: home.owner, body: { area: 42 } });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.field, 'area');
    const unknown = await request(`${home.base}/api/home/devices/nothing_here`, { method: 'POST', token: home.owner, body: { area: 'Kitchen' } });
    assert.equal(unknown.status, 404);
    const back = await request(url, { method: 'POST', token: home.owner, body: { resetArea: true } });
    assert.equal(back.json.area, 'Hallway');
    assert.equal(back.json.areaFrom, 'source');
  });

  it("`hearth floors` and `hearth areas`: a floor for a source's area, renamed and removed; bad names refused", async () => {
    const floor = await cli(['floors', 'add', 'Upstairs', '--level', '1', '--alias', 'first floor']);
    assert.equal(floor.code, 0, floor.stderr);
    const placed = await cli(['areas', 'floor', 'Bedroom', 'upstairs']);
    assert.equal(placed.code, 0, placed.stderr);
    assert.match(placed.stdout, /^Bedroom on Upstairs: 3 device\(s\)/);
    const areas = await cli(['areas']);
    assert.match(areas.stdout, /^Bedroom\s+Upstairs\s+3\s+stored$/m);
    assert.match(areas.stdout, /^Living room\s+\s*\d+\s+a source$/m);
    const list = (await cli(['devices', '--json'])).stdout;
    const radiator = (JSON.parse(list) as Array<{ id: string; floor: string | null }>).find((d) => d.id === RADIATOR)!;
    assert.equal(radiator.floor, 'Upstairs');
    const empty = await cli(['floors', 'add', '\u0007']);
    assert.equal(empty.code, 2);
    assert.match(empty.stderr, /name: .*has no letters or digits/);
    const twice = await cli(['floors', 'add', 'upstairs']);
    assert.notEqual(twice.code, 0);
    assert.match(twice.stderr, /already a floor "Upstairs"/);
    const removed = await cli(['floors', 'remove', 'Upstairs']);
    assert.equal(removed.code, 0, removed.stderr);
    assert.match(removed.stdout, /removed the floor Upstairs; 1 area\(s\) were on it/);
  });

  it('a guest reading the home is shown no area, device or count it may not read', async () => {
    const deny = await cli(['policy', 'deny', 'role:guest', '--area', 'Bathroom', '--action', 'read', '--priority', '50']);
    assert.equal(deny.code, 0, deny.stderr);
    const ownerAreas = await request(`${home.base}/api/home/areas`, { token: home.owner });
    assert.ok((ownerAreas.json as Array<{ name: string }>).some((a) => a.name === 'Bathroom'));
    const areas = await request(`${home.base}/api/home/areas`, { token: home.guest });
    assert.equal(areas.status, 200);
    assert.ok(!(areas.json as Array<{ name: string }>).some((a) => a.name === 'Bathroom'), areas.text);
    assert.ok((areas.json as Array<{ name: string }>).some((a) => a.name === 'Living room'));
    const list = await request(`${home.base}/api/home/devices`, { token: home.guest });
    assert.ok(!(list.json as HomeDeviceJson[]).some((d) => d.area === 'Bathroom'), 'the leak sensor is not named');
    assert.ok(!list.text.includes('Leak sensor'));
  });

  it('two devices with one name in one area: the second is told, nothing is overwritten', async () => {
    const renamed = await cli(['devices', 'rename', 'Bedroom/Bedside lamp', 'Ceiling light']);
    assert.equal(renamed.code, 0, renamed.stderr);
    const clash = await cli(['devices', 'area', 'Bedroom/Ceiling light', 'Living room']);
    assert.notEqual(clash.code, 0);
    assert.match(clash.stderr, /already the name of living_room_ceiling_light in "Living room"/);
    const viaHttp = await request(`${home.base}/api/home/devices/${BEDSIDE}`, { method: 'POST', token: home.owner, body: { area: 'Living room' } });
    assert.equal(viaHttp.status, 409);
    const list = await devices();
    assert.equal(find(list, BEDSIDE).area, 'Bedroom');
    assert.equal(find(list, CEILING).name, 'Ceiling light');
    assert.equal((await cli(['devices', 'rename', BEDSIDE, '--reset'])).code, 0);
  });

  it('areas set by the CLI and the HTTP API survive a rename in Zigbee2MQTT and a restart; the home exports and imports', async () => {
    const viaHttp = await request(`${home.base}/api/home/devices/${encodeURIComponent('Office/Desk plug')}`, {
      method: 'POST',
      token: home.owner,
      body: { area: 'Study', create: true, aliases: ['desk power'] },
    });
    assert.equal(viaHttp.status, 200, viaHttp.text);
    await home.sim.rename('0x00158d0004a1b2c3', 'Front door contact');
    await home.sim.rename('Office/Desk plug', 'Desk/Plug');
    await waitFor('the renames', async () => {
      const list = await devices();
      return find(list, CONTACT).name === 'Front door contact' && find(list, DESK_PLUG).name === 'Plug';
    });
    await home.restart();
    const list = await devices();
    assert.equal(find(list, CONTACT).area, 'Front door');
    assert.equal(find(list, SPOTS).area, 'Kitchen');
    const plug = find(list, DESK_PLUG);
    assert.equal(plug.area, 'Study');
    assert.deepEqual(plug.aliases, ['desk power']);

    const file = join(dir, 'home.yaml');
    const exported = await cli(['home', 'export', file]);
    assert.equal(exported.code, 0, exported.stderr);
    const text = readFileSync(file, 'utf8');
    assert.match(text, /identity: zigbee2mqtt:0x00158d0004a1b2c3\n(?:.*\n)*?\s+area: Front door/);
    writeFileSync(file, `${text}  - identity: zigbee2mqtt:0x00158d00deadbeef\n    area: Attic\n`);
    const imported = await cli(['home', 'import', file]);
    assert.equal(imported.code, 0, imported.stderr);
    assert.match(imported.stdout, /1 device\(s\) Hearth does not see now \(kept; they apply when the device appears\): zigbee2mqtt:0x00158d00deadbeef/);
    const again = await request(`${home.base}/api/home/export`, { token: home.owner });
    assert.match(again.text, /zigbee2mqtt:0x00158d00deadbeef/);
    assert.equal((await request(`${home.base}/api/home/export`, { token: home.guest })).status, 403);
  });

  it("one entity apart from its device, an area's and a floor's aliases, and removing them (CLI, HTTP): devices go back to their source's area or none, nothing else lost; a guest changes nothing", async () => {
    const PLUG = DESK_PLUG;
    const POWER = `${PLUG}.power`;
    const entityArea = (list: HomeDeviceJson[], device: string, entity: string) => find(list, device).entities.find((e) => e.id === entity)!.area;
    // The plug's power reading with the lamp it feeds: the entity moves, its device stays.
    const apart = await cli(['devices', 'area', POWER, 'Living room']);
    assert.equal(apart.code, 0, apart.stderr);
    assert.match(apart.stdout, new RegExp(`${POWER.replace('.', '\\.')}\\s+sensor\\s+exposed to agents\\s+area Living room`));
    let list = await devices();
    assert.equal(entityArea(list, PLUG, POWER), 'Living room');
    assert.equal(find(list, PLUG).area, 'Study');
    assert.equal(entityArea(list, PLUG, `${PLUG}.energy`), 'Study', 'the rest of the plug stays with it');

    // "entrance" already names the lock's area (Entrance/Front door lock): one phrase never names two areas.
    const taken = await cli(['areas', 'alias', 'Front door', 'entrance', 'porch']);
    assert.notEqual(taken.code, 0);
    assert.match(taken.stderr, /"entrance" already names the area "Entrance"/);
    const aliases = await cli(['areas', 'alias', 'Front door', 'front step', 'porch']);
    assert.equal(aliases.code, 0, aliases.stderr);
    assert.match(aliases.stdout, /^Front door, also called front step, porch: \d+ device\(s\)$/m);
    assert.equal((await cli(['floors', 'add', 'Ground', '--level', '0'])).code, 0);
    assert.equal((await cli(['areas', 'floor', 'Kitchen', 'Ground'])).code, 0);
    const floorAliases = await cli(['floors', 'alias', 'Ground', 'downstairs', 'ground floor']);
    assert.equal(floorAliases.code, 0, floorAliases.stderr);
    assert.match(floorAliases.stdout, /^Ground \(level 0\), also called downstairs, ground floor$/m);
    const missingFloor = await cli(['floors', 'alias', 'Attic', 'loft']);
    assert.notEqual(missingFloor.code, 0);
    assert.match(missingFloor.stderr, /no floor "Attic"/);

    // A guest gets 403 for every one of these, and nothing changes.
    const snapshot = async () =>
      JSON.stringify(
        await Promise.all(['devices', 'areas', 'floors'].map(async (k) => (await request(`${home.base}/api/home/${k}`, { token: home.owner })).json)),
      );
    const before = await snapshot();
    for (const [method, path, body] of [
      ['POST', `/api/home/entities/${encodeURIComponent(POWER)}`, { area: 'Kitchen' }],
      ['POST', '/api/home/areas/Front%20door', { aliases: ['hall'] }],
      ['DELETE', '/api/home/areas/Front%20door', undefined],
      ['POST', '/api/home/floors/Ground', { aliases: [] }],
      ['DELETE', '/api/home/floors/Ground', undefined],
    ] as const) {
      const r = await request(`${home.base}${path}`, { method, token: home.guest, body });
      assert.equal(r.status, 403, `${method} ${path}: ${r.text}`);
      assert.match(r.json.error.message, /only an owner/);
    }
    assert.equal(await snapshot(), before, 'a guest changed nothing');

    // Removing an area: a device a person put there goes back to its source's area (the motion sensor's Hallway),
    // or to no area (the contact, which no source places); an entity placed there follows its device again; their
    // names, aliases and exposure stay.
    assert.equal((await cli(['devices', 'area', 'Hallway/Motion sensor', 'Front door'])).code, 0);
    assert.equal((await cli(['devices', 'alias', MOTION, 'hall motion'])).code, 0);
    const viaHttp = await request(`${home.base}/api/home/entities/${encodeURIComponent(POWER)}`, {
      method: 'POST',
      token: home.owner,
      body: { area: 'Front door' },
    });
    assert.equal(viaHttp.status, 200, viaHttp.text);
    assert.equal(entityArea(await devices(), PLUG, POWER), 'Front door');
    const removed = await cli(['areas', 'remove', 'Front door']);
    assert.equal(removed.code, 0, removed.stderr);
    assert.match(removed.stdout, /removed the area Front door; \d+ device\(s\) placed there go back to where their source says \(else to no area\)/);
    list = await devices();
    assert.deepEqual([find(list, MOTION).area, find(list, MOTION).areaFrom, find(list, MOTION).aliases], ['Hallway', 'source', ['hall motion']]);
    assert.deepEqual([find(list, CONTACT).area, find(list, CONTACT).name], [null, 'Front door contact']);
    assert.equal(entityArea(list, PLUG, POWER), 'Study', 'the power reading is with its plug again');
    assert.deepEqual(find(list, PLUG).aliases, ['desk power']);
    const areas = (await request(`${home.base}/api/home/areas`, { token: home.owner })).json as Array<{ name: string; floor: string | null }>;
    assert.ok(!areas.some((a) => a.name === 'Front door'));

    // Removing a floor: its areas stay, on no floor, with their devices.
    const floorGone = await request(`${home.base}/api/home/floors/Ground`, { method: 'DELETE', token: home.owner });
    assert.equal(floorGone.status, 200, floorGone.text);
    const after = (await request(`${home.base}/api/home/areas`, { token: home.owner })).json as Array<{ name: string; floor: string | null; devices: number }>;
    const kitchen = after.find((a) => a.name === 'Kitchen')!;
    assert.equal(kitchen.floor, null);
    assert.ok(kitchen.devices >= 1);
    assert.equal(find(await devices(), SPOTS).area, 'Kitchen');
  });
});
