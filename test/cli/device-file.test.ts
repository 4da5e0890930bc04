// A device file broken while the daemon runs: the daemon keeps its last good
// version, and a command asked afterwards gives the daemon's answer (the tool is
// still there), not one of its own read from the broken file.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../helpers/brokers.js';
import { runGroup, startDaemon, type GroupProcess } from '../helpers/daemon.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-broken-file-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const deskLamp = `devices:
  - id: desk
    name: Desk
    entities:
      lamp:
        kind: switch
        name: Desk lamp
        state_topic: desk/lamp
        command_topic: desk/lamp/set
`;

describe('a device file broken while the daemon runs', () => {
  const devices = join(dir, 'devices');
  const db = join(dir, 'h.db');
  let daemon: GroupProcess;
  let http: string;
  const common = ['--db', db, '--devices', devices, '--no-demo'];

  before(async () => {
    mkdirSync(devices);
    writeFileSync(join(devices, 'desk.yaml'), deskLamp);
    daemon = await startDaemon([...common, '--broker-port', String(await freePort()), '--http-port', '0'], { cwd: dir });
    http = /http +(http:\/\/127\.0\.0\.1:\d+)/.exec(daemon.stdout())![1];
    writeFileSync(join(devices, 'desk.yaml'), 'devices:\n  - id: desk\n    name: [unclosed\n');
    await daemon.waitFor('its last good version stays in use', 'stderr');
  });
  after(async () => {
    await daemon?.stop();
  });

  it('the daemon still has the desk lamp (its HTTP API lists it)', async () => {
    const token = JSON.parse((await runGroup(['token', 'create', 'checker', '--role', 'owner', '--json', ...common], { cwd: dir })).stdout) as {
      secret: string;
    };
    const res = await fetch(`${http}/api/devices`, { headers: { authorization: `Bearer ${token.secret}` } });
    assert.equal(res.status, 200);
    const entities = (await res.json()) as Array<{ id: string }>;
    assert.deepEqual(
      entities.map((e) => e.id),
      ['desk.lamp'],
    );
  });

  it('and so do `hearth tools` and `hearth call` asked afterwards: the daemon answers, not the broken file', async () => {
    const tools = await runGroup(['tools', ...common], { cwd: dir });
    assert.equal(tools.code, 0, tools.stderr);
    assert.match(tools.stdout, /^desk_lamp +actuator/m);
    const call = await runGroup(['call', 'desk_lamp', '{"action":"explode"}', ...common], { cwd: dir });
    assert.doesNotMatch(call.stderr, /no tool/);
    assert.equal(call.code, 2, call.stderr);
    assert.match(call.stderr, /invalid arguments: "action" must be one of "turn_on", "turn_off"/);
    const listed = await runGroup(['devices', '--json', ...common], { cwd: dir });
    assert.deepEqual(
      (JSON.parse(listed.stdout) as Array<{ id: string }>).map((d) => d.id),
      ['desk'],
    );
  });

  it('on its own, a command reads the broken file: the difference the daemon removes', async () => {
    const alone = await runGroup(['tools', ...common, '--standalone'], { cwd: dir });
    assert.doesNotMatch(alone.stdout, /desk_lamp/);
    assert.match(alone.stderr, /desk\.yaml/);
  });
});
