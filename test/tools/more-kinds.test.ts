// Fans, valves and alarm panels (kinds that discovery brings) through the real pipeline and simulator.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/load.js';
import { Hearth } from '../../src/hearth.js';
import { startSimulator, type Simulator } from '../../src/simulator/simulator.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { logSink } from '../helpers/log-sink.js';
import { OWNER } from '../helpers/home.js';

const FILE = `
devices:
  - id: attic_fan
    name: Attic fan
    area: Attic
    entities:
      fan:
        kind: fan
        state_topic: t/fan
        value_path: state
        attributes: { percentage: percentage, preset_mode: preset }
        command_topic: t/fan/set
        command_format: json
        options: { preset_mode: [eco, boost] }
  - id: garden_valve
    name: Garden valve
    area: Garden
    entities:
      valve:
        kind: valve
        state_topic: t/valve
        attributes: { position: { topic: t/valve/position } }
        command_topic: t/valve/set
        command_topics: { position: t/valve/position/set }
        simulate: { travel_ms: 300 }
  - id: alarm
    name: House alarm
    area: Hallway
    entities:
      panel:
        kind: alarm_control_panel
        state_topic: t/alarm
        command_topic: t/alarm/set
        simulate: { travel_ms: 200 }
`;

describe('fan, valve and alarm panel', () => {
  let broker: TestBroker;
  let hearth: Hearth;
  let sim: Simulator;
  const dir = mkdtempSync(join(tmpdir(), 'hearth-kinds-'));
  const call = (tool: string, args: Record<string, unknown>) => hearth.tools.call(tool, args, OWNER);

  before(async () => {
    broker = await startAedes();
    writeFileSync(join(dir, 'kinds.yaml'), FILE);
    const { config } = loadConfig({
      cwd: dir,
      env: {},
      flags: { 'mqtt.url': broker.url, 'devices.paths': [dir], demo: false, 'database.path': join(dir, 'h.db') },
    });
    hearth = await Hearth.open({ config, log: logSink('warn').log });
    hearth.policy.add({ subject: 'role:owner', targetType: 'any', target: '*', action: 'actuate', effect: 'allow' });
    sim = await startSimulator({ url: broker.url, devices: hearth.bridge.registry.devices(), log: logSink('warn').log });
    await hearth.bridge.settle(3000);
  });
  after(async () => {
    await sim?.close();
    await hearth?.close();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('generates tools with the right actions and arguments', () => {
    const fan = hearth.tools.get('attic_fan')!;
    const props = fan.parameters.properties as Record<string, { enum?: string[]; maximum?: number }>;
    assert.deepEqual(props.action.enum, ['turn_on', 'turn_off', 'set_percentage', 'set_preset_mode']);
    assert.equal(props.percentage.maximum, 100);
    assert.deepEqual(props.preset_mode.enum, ['eco', 'boost']);
    assert.deepEqual((hearth.tools.get('garden_valve')!.parameters.properties as Record<string, { enum?: string[] }>).action.enum, [
      'open',
      'close',
      'stop',
      'set_position',
    ]);
    assert.deepEqual((hearth.tools.get('house_alarm')!.parameters.properties as Record<string, { enum?: string[] }>).action.enum, [
      'arm_home',
      'arm_away',
      'arm_night',
      'disarm',
    ]);
  });

  it('a fan takes speed and presets, confirmed by its echo', async () => {
    assert.match((await call('attic_fan', { action: 'set_percentage', percentage: 70 })).text!, /^confirmed: .*on, percentage 70/);
    assert.match((await call('attic_fan', { action: 'set_preset_mode', preset_mode: 'boost' })).text!, /^confirmed: .*preset mode "boost"/);
    assert.match((await call('attic_fan', { action: 'set_preset_mode', preset_mode: 'turbo' })).text!, /"preset_mode" must be one of "eco", "boost"/);
    assert.match((await call('attic_fan', { action: 'turn_off' })).text!, /^confirmed: .*off/);
  });

  it('a valve opens to a position', async () => {
    assert.match((await call('garden_valve', { action: 'open' })).text!, /^confirmed: .*open, position 100%/);
    assert.match((await call('garden_valve', { action: 'set_position', position: 30 })).text!, /^confirmed: .*position 30%/);
  });

  it('an alarm arms at once but disarming needs a person, even for an owner', async () => {
    assert.match((await call('house_alarm', { action: 'arm_away' })).text!, /^confirmed: .*armed_away/);
    const held = await call('house_alarm', { action: 'disarm' });
    assert.match(held.text!, /^needs approval: rule #5/);
    hearth.approvals.grant((held.details as { approvalId: string }).approvalId, 'cli:test');
    assert.match((await call('house_alarm', { action: 'disarm' })).text!, /^confirmed: .*disarmed/);
  });
});
