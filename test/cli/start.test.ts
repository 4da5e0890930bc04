// `hearth start` on the embedded default, and `hearth devices` against it, as a user runs them.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../helpers/brokers.js';
import { runHearth, spawnHearth, type Spawned } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const DEMO_ENTITIES = [
  'front_door.camera',
  'front_door.lock',
  'garage_door.door',
  'hallway_motion.occupancy',
  'kitchen_light.light',
  'living_room_climate.humidity',
  'living_room_climate.temperature',
  'living_room_lamp.lamp',
  'robot_vacuum.vacuum',
  'siren.siren',
  'thermostat.climate',
];

describe('hearth start (embedded default)', () => {
  let port: number;
  let httpPort: number;
  let bridge: Spawned;

  before(async () => {
    port = await freePort();
    httpPort = await freePort();
    bridge = spawnHearth(['start', '--broker-port', String(port), '--db', join(dir, 'h.db'), '--set', `http.port=${httpPort}`], { cwd: dir });
    await bridge.waitForOutput('Press Ctrl+C to stop.', 20_000);
  });
  after(async () => {
    await bridge?.stop();
  });

  it('prints the broker, the demo devices and their live values within 5 s', () => {
    const out = bridge.stdout();
    assert.match(out, new RegExp(`broker +embedded at mqtt://127\\.0\\.0\\.1:${port} \\(connected\\)`));
    assert.match(out, /devices +9 devices, 11 entities/);
    assert.match(out, new RegExp(`http +http://127\\.0\\.0\\.1:${httpPort} +\\(web page and API, MCP at /mcp`));
    assert.match(out, /state +11\/11 entities reporting/);
    assert.match(out, /living_room_lamp\.lamp +switch +Living room +off/);
    assert.match(out, /front_door\.camera +camera +Entrance +image\/jpeg frame/);
    assert.match(out, /living_room_climate\.temperature +sensor +Living room +\d+(\.\d)? °C/);
  });

  it('`hearth devices --json` lists every demo entity with its state', async () => {
    const { code, stdout, stderr } = await runHearth(['devices', '--json', '--broker-port', String(port)], { cwd: dir });
    assert.equal(code, 0, stderr);
    const devices = JSON.parse(stdout) as Array<{
      id: string;
      entities: Array<{ id: string; value: unknown; available: boolean; updatedAt: string; frame?: { contentType: string } }>;
    }>;
    const entities = devices.flatMap((d) => d.entities);
    assert.deepEqual(entities.map((e) => e.id).sort(), DEMO_ENTITIES);
    for (const e of entities) {
      assert.equal(e.available, true, `${e.id} online`);
      assert.ok(e.updatedAt, `${e.id} has reported`);
      if (e.id === 'front_door.camera') assert.equal(e.frame?.contentType, 'image/jpeg');
      else assert.notEqual(e.value, null, `${e.id} has a value`);
    }
    assert.equal(entities.find((e) => e.id === 'front_door.lock')!.value, 'locked');
  });

  it('`hearth devices` prints a table', async () => {
    const { code, stdout } = await runHearth(['devices', '--broker-port', String(port)], { cwd: dir });
    assert.equal(code, 0);
    assert.match(stdout, /9 devices, 11 entities/);
    // Said by name within its area first (issue 41), the entity id last for scripts.
    assert.match(stdout, /^NAME +AREA +KIND +STATE +AVAILABLE +UPDATED +ENTITY$/m);
    assert.match(stdout, /^Garage door +Garage +cover +closed, position 0% +yes +.* garage_door\.door$/m);
  });
});

describe('hearth start refuses to start on bad setup', () => {
  it('stops with the file and field of a broken config', async () => {
    const cfg = join(dir, 'broken.yaml');
    writeFileSync(cfg, 'mqtt:\n  embedded:\n    port: "many"\n');
    const { code, stderr, stdout } = await runHearth(['start', '--config', cfg]);
    assert.equal(code, 2);
    assert.match(stderr, /configuration error: .*broken\.yaml: mqtt\.embedded\.port: must be integer \(got "many"\)/);
    assert.equal(stdout, '');
  });

  it('names the TLS file hearth.yaml gives that is not there, before it opens anything', async () => {
    const home = mkdtempSync(join(dir, 'tls-'));
    writeFileSync(join(home, 'hearth.yaml'), 'mqtt:\n  url: mqtts://127.0.0.1:1\n  ca: certs/ca.pem\n');
    const { code, stderr } = await runHearth(['start', '--http-port', '0'], { cwd: home });
    assert.equal(code, 2);
    assert.match(stderr, new RegExp(`configuration error: config: mqtt\\.ca: no such file ${join(home, 'certs', 'ca.pem')}`));
    assert.deepEqual(readdirSync(home), ['hearth.yaml'], 'no database made');
  });

  it('names a sentences folder hearth.yaml gives that is not there, at start rather than at the first chat turn', async () => {
    const home = mkdtempSync(join(dir, 'sentences-'));
    writeFileSync(join(home, 'hearth.yaml'), 'intent:\n  sentences: sentences\n');
    const { code, stderr } = await runHearth(['start', '--http-port', '0', '--no-demo'], { cwd: home });
    assert.equal(code, 2);
    assert.match(stderr, new RegExp(`configuration error: config: intent\\.sentences: ${join(home, 'sentences')} is not a folder`));
  });

  it('says clearly when the embedded broker port is taken', async () => {
    const server = createServer();
    const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
    try {
      const { code, stderr } = await runHearth(['start', '--broker-port', String(port), '--db', join(dir, 'x.db')], { cwd: dir });
      assert.equal(code, 3);
      assert.match(stderr, new RegExp(`port ${port} on 127\\.0\\.0\\.1 is already in use`));
      assert.match(stderr, /set mqtt\.url/);
    } finally {
      server.close();
    }
  });

  it('says clearly when the HTTP port is taken, and does not run without its page', async () => {
    const server = createServer();
    const httpPort = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
    try {
      const brokerPort = await freePort();
      const { code, stderr, stdout } = await runHearth(
        ['start', '--broker-port', String(brokerPort), '--db', join(dir, 'y.db'), '--set', `http.port=${httpPort}`],
        { cwd: dir },
      );
      assert.equal(code, 3);
      assert.match(stderr, new RegExp(`the HTTP port 127\\.0\\.0\\.1:${httpPort} is already in use: pick another with --http-port`));
      assert.doesNotMatch(stdout, /Press Ctrl\+C/);
    } finally {
      server.close();
    }
  });

  it('`hearth devices` says where it looked when no bridge is running', async () => {
    const port = await freePort();
    const { code, stderr } = await runHearth(['devices', '--broker-port', String(port)], { cwd: dir, timeoutMs: 20_000 });
    assert.equal(code, 1);
    assert.match(stderr, new RegExp(`cannot reach the broker at mqtt://127\\.0\\.0\\.1:${port}`));
  });
});
