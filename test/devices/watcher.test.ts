// Device files edited while Hearth runs: added, changed (also by an editor's
// write-and-rename save), broken mid-edit (the last good version stays),
// fixed and deleted, on real files; the tool set follows each time.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/load.js';
import { Hearth } from '../../src/hearth.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';

const fan = (name: string) => `devices:
  - id: desk
    name: Desk
    entities:
      fan:
        kind: switch
        name: ${name}
        state_topic: watch/desk/fan
        command_topic: watch/desk/fan/set
`;
const heater = `devices:
  - id: porch
    name: Porch
    entities:
      heater:
        kind: switch
        name: Porch heater
        state_topic: watch/porch/heater
        command_topic: watch/porch/heater/set
`;

describe('device files reloaded while running', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-watch-'));
  const devices = join(dir, 'devices');
  const logs = logSink('debug');
  let hearth: Hearth;
  const names = () =>
    hearth.bridge.registry
      .entities()
      .map((e) => e.name)
      .sort();
  const tools = () => hearth.tools.all().map((t) => t.name);

  before(async () => {
    mkdirSync(devices);
    writeFileSync(join(devices, 'desk.yaml'), fan('Desk fan'));
    const { config } = loadConfig({
      cwd: dir,
      env: {},
      flags: { 'devices.paths': [devices], demo: false, 'database.path': join(dir, 'hearth.db'), 'tools.shape': 'per-entity' },
    });
    hearth = await Hearth.open({ config, log: logs.log, connect: false });
    assert.equal(hearth.bridge.watchDevices(), 1, 'one folder watched');
  });
  after(async () => {
    await hearth?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a new file adds its device and its tool', async () => {
    assert.deepEqual(names(), ['Desk fan']);
    writeFileSync(join(devices, 'porch.yaml'), heater);
    await waitFor('the porch heater', () => names().includes('Porch heater'));
    await waitFor('its tool', () => tools().includes('porch_heater'));
    assert.ok(logs.find(/device files reloaded: 1 added, 0 removed/).length > 0);
  });

  it("an editor's save (write a temporary file, rename it over) changes the device", async () => {
    const tmp = join(devices, '.desk.yaml.swp');
    writeFileSync(tmp, fan('Desk ventilator'));
    renameSync(tmp, join(devices, 'desk.yaml'));
    await waitFor('the new name', () => names().includes('Desk ventilator'));
    assert.ok(!names().includes('Desk fan'));
  });

  it('a file broken mid-edit keeps its last good version, and says so', async () => {
    writeFileSync(join(devices, 'desk.yaml'), 'devices:\n  - id: desk\n    name: [unclosed\n');
    await waitFor('the problem logged', () => logs.find(/device file has a problem \(its last good version stays in use\)/).length > 0);
    assert.ok(names().includes('Desk ventilator'), 'the device is still there');
    assert.ok(tools().includes('desk_ventilator'), 'and so is its tool');
    writeFileSync(join(devices, 'desk.yaml'), fan('Desk fan'));
    await waitFor('the fixed file', () => names().includes('Desk fan'));
  });

  it('a deleted file takes its device and tool away', async () => {
    unlinkSync(join(devices, 'porch.yaml'));
    await waitFor('the porch heater gone', () => !names().includes('Porch heater'));
    assert.ok(!tools().includes('porch_heater'));
    assert.deepEqual(names(), ['Desk fan']);
  });
});
