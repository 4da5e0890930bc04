// The demo home's robot vacuum and siren (#31), simulated, through the real pipeline on a real broker:
// a newcomer can start the vacuum, send it home and sound the siren, and sees each confirmed by what
// the simulated device reports.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Hearth } from '../../src/hearth.js';
import { startSimulator, type Simulator } from '../../src/simulator/simulator.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { OWNER, openHearth } from '../helpers/home.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';

const DEMO = fileURLToPath(new URL('../../devices/demo', import.meta.url));

describe('demo robot vacuum and siren', () => {
  let broker: TestBroker;
  let hearth: Hearth;
  let sim: Simulator;
  const dir = mkdtempSync(join(tmpdir(), 'hearth-demo-kinds-'));
  const call = (tool: string, args: Record<string, unknown>) => hearth.tools.call(tool, args, OWNER);

  before(async () => {
    broker = await startAedes();
    hearth = await openHearth(broker.url, dir, logSink('warn').log, { 'devices.paths': [DEMO] });
    // The built-in rules ask a person before a siren acts, even for owners (migration 0015); an allow above
    // priority 100 lets the test's owner act without one, as `hearth policy allow --priority 101` would.
    hearth.policy.add({ subject: 'role:owner', targetType: 'kind', target: 'siren', action: '*', effect: 'allow', priority: 101, note: 'test' });
    // The vacuum drives home in a short while here.
    const devices = hearth.bridge.registry
      .devices()
      .map((d) => (d.id === 'robot_vacuum' ? { ...d, entities: d.entities.map((e) => ({ ...e, simulate: { ...e.simulate, travel_ms: 300 } })) } : d));
    sim = await startSimulator({ url: broker.url, devices, log: logSink('warn').log });
    await waitFor('the vacuum docked', () => hearth.bridge.cache.get('robot_vacuum.vacuum')?.value === 'docked', 5000);
  });
  after(async () => {
    await sim?.close();
    await hearth?.close();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the vacuum reports docked with its battery and fan speed', async () => {
    const read = await call('get_state', { entity: 'robot_vacuum.vacuum' });
    assert.match(read.text!, /docked, battery \d+%, fan speed quiet/);
    assert.match(read.text!, /Choices: fan_speed one of quiet, standard, max/);
  });

  it('start cleans, return_to_base drives home and docks', async () => {
    assert.match((await call('robot_vacuum', { action: 'start' })).text!, /^confirmed: .*cleaning/);
    assert.match((await call('robot_vacuum', { action: 'set_fan_speed', fan_speed: 'max' })).text!, /^confirmed: .*fan speed max/);
    assert.match((await call('robot_vacuum', { action: 'return_to_base' })).text!, /^confirmed: .*returning/);
    await waitFor('docked again', () => hearth.bridge.cache.get('robot_vacuum.vacuum')?.value === 'docked', 5000);
  });

  it('the siren sounds with a tone and volume, confirmed by its report, and falls silent after its duration', async () => {
    const on = await call('siren', { action: 'turn_on', tone: 'chime', volume: 0.4, duration: 1 });
    assert.match(on.text!, /^confirmed: .*on, tone chime, volume level 0.4/);
    await waitFor('silent again', () => hearth.bridge.cache.get('siren.siren')?.value === 'off', 5000);
  });
});
