// Home Assistant command templates that render each call's value (a number's
// value, a thermostat's setpoint and mode, a fan's speed, a select's option, a
// cover's position), through the real pipeline on a real broker: the device
// receives what Home Assistant would send, and its echo confirms the call.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import type { Hearth } from '../../src/hearth.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { actuatorTool, OWNER, openHearth } from '../helpers/home.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';

const DEVICE = { identifiers: ['tpl_home'], name: 'Template home' };

/** Discovery configs shaped like the real ones (Shelly, Zigbee2MQTT's fan and bridge select). */
const CONFIGS: Record<string, Record<string, unknown>> = {
  'homeassistant/number/boiler/flow/config': {
    name: 'Boiler flow temperature',
    unique_id: 'boiler_flow',
    device: DEVICE,
    command_topic: 'tpl/boiler/set',
    command_template: '{"flow": {{ value }}}',
    state_topic: 'tpl/boiler/state',
    value_template: '{{ value_json.flow }}',
    min: 30,
    max: 80,
    step: 1,
  },
  'homeassistant/climate/hall/trv/config': {
    name: 'Hall thermostat',
    unique_id: 'hall_trv',
    device: DEVICE,
    temperature_command_topic: 'tpl/trv/target/set',
    temperature_command_template: '{"target_t": {"enabled": true, "value": {{ value }}}}',
    temperature_state_topic: 'tpl/trv/target',
    temperature_state_template: '{{ value_json.target_t.value }}',
    mode_command_topic: 'tpl/trv/mode/set',
    mode_command_template: '{{ value | upper }}',
    mode_state_topic: 'tpl/trv/mode',
    mode_state_template: '{{ value | lower }}',
    modes: ['off', 'heat'],
    min_temp: 5,
    max_temp: 30,
    temp_step: 0.5,
  },
  'homeassistant/fan/bedroom/fan/config': {
    name: 'Bedroom fan',
    unique_id: 'bedroom_fan',
    device: DEVICE,
    command_topic: 'tpl/fan/set/fan_state',
    state_topic: 'tpl/fan',
    state_value_template: '{{ value_json.fan_state }}',
    percentage_command_topic: 'tpl/fan/set/fan_mode',
    percentage_command_template: "{{ {0:'off', 1:'low', 2:'medium', 3:'high', 4:'on'}[value] | default('') }}",
    percentage_state_topic: 'tpl/fan',
    percentage_value_template: "{{ {'off':0, 'low':1, 'medium':2, 'high':3, 'on':4}[value_json.fan_mode] | default('None') }}",
    speed_range_min: 1,
    speed_range_max: 4,
  },
  'homeassistant/select/bridge/log_level/config': {
    name: 'Log level',
    unique_id: 'bridge_log_level',
    device: DEVICE,
    command_topic: 'tpl/bridge/request/options',
    command_template: '{"options": {"advanced": {"log_level": "{{ value }}" } } }',
    state_topic: 'tpl/bridge/info',
    value_template: '{{ value_json.log_level | lower }}',
    options: ['error', 'warning', 'info', 'debug'],
  },
  'homeassistant/cover/garden/blind/config': {
    name: 'Garden blind',
    unique_id: 'garden_blind',
    device: DEVICE,
    command_topic: 'tpl/blind/set',
    set_position_topic: 'tpl/blind/position/set',
    set_position_template: '{"position": {{ position }}, "speed": "slow"}',
    position_topic: 'tpl/blind/position',
    position_template: '{{ value_json.position }}',
  },
  'homeassistant/number/vent/flap/config': {
    name: 'Vent flap',
    unique_id: 'vent_flap',
    device: DEVICE,
    command_topic: 'tpl/vent/set',
    command_template: '{{ value_json.flap.angle }}',
    state_topic: 'tpl/vent/state',
  },
  'homeassistant/number/pump/speed/config': {
    name: 'Pump speed',
    unique_id: 'pump_speed',
    device: DEVICE,
    command_topic: 'tpl/pump/set',
    command_template: '{{ value | to_the_moon }}',
    state_topic: 'tpl/pump/state',
  },
};

describe('Home Assistant command templates rendered per call', () => {
  let broker: TestBroker;
  let hearth: Hearth;
  let device: MqttClient;
  let dir: string;
  const logs = logSink('debug');
  const received: Array<{ topic: string; payload: string }> = [];

  before(async () => {
    broker = await startAedes();
    dir = mkdtempSync(join(tmpdir(), 'hearth-ha-tpl-'));
    hearth = await openHearth(broker.url, dir, logs.log, { 'discovery.zigbee2mqtt.enabled': false, 'discovery.homie.enabled': false });

    // The devices: record every command, answer with the state a real one reports.
    device = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    const fanWords = ['off', 'low', 'medium', 'high', 'on'];
    device.on('message', (topic, payload) => {
      const text = payload.toString();
      received.push({ topic, payload: text });
      if (topic === 'tpl/boiler/set') device.publish('tpl/boiler/state', JSON.stringify({ flow: (JSON.parse(text) as { flow: number }).flow }));
      else if (topic === 'tpl/trv/target/set') device.publish('tpl/trv/target', JSON.stringify(JSON.parse(text)));
      else if (topic === 'tpl/trv/mode/set') device.publish('tpl/trv/mode', text);
      else if (topic === 'tpl/fan/set/fan_mode' && fanWords.includes(text))
        device.publish('tpl/fan', JSON.stringify({ fan_state: text === 'off' ? 'OFF' : 'ON', fan_mode: text }));
      else if (topic === 'tpl/bridge/request/options') {
        const level = (JSON.parse(text) as { options: { advanced: { log_level: string } } }).options.advanced.log_level;
        device.publish('tpl/bridge/info', JSON.stringify({ log_level: level.toUpperCase() }));
      } else if (topic === 'tpl/blind/position/set')
        device.publish('tpl/blind/position', JSON.stringify({ position: (JSON.parse(text) as { position: number }).position }));
    });
    await device.subscribeAsync('tpl/#');
    for (const [topic, body] of Object.entries(CONFIGS)) await device.publishAsync(topic, JSON.stringify(body), { qos: 1 });
    await waitFor('the discovered entities', () => hearth.bridge.registry.entities().length >= 7);
    // Readings to start from, as real devices publish on connect.
    await device.publishAsync('tpl/trv/mode', 'OFF', { qos: 1 });
    await device.publishAsync('tpl/fan', JSON.stringify({ fan_state: 'OFF', fan_mode: 'off' }), { qos: 1 });
  });
  after(async () => {
    await device?.endAsync(true).catch(() => undefined);
    await hearth?.close();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const toolFor = (name: string) => {
    // Home Assistant names an entity "<device> <entity>".
    const entity = hearth.bridge.registry.entities().find((e) => e.name === `${DEVICE.name} ${name}`);
    assert.ok(entity, `${name} is discovered`);
    return actuatorTool(hearth, entity.id);
  };

  /** One call: confirmed, and exactly these messages reached the device. */
  async function call(name: string, args: Record<string, unknown>, expected: Array<[string, string]>): Promise<void> {
    received.length = 0;
    const result = await hearth.tools.call(toolFor(name).name, args, OWNER);
    assert.match(result.text!, /^confirmed/, result.text);
    assert.deepEqual(
      // The device hears its own echoes on tpl/#: only commands count.
      received.filter((m) => /\/set$|\/set\/|\/request\//.test(m.topic)).map((m) => [m.topic, m.payload]),
      expected,
    );
  }

  test("a number's value goes through its JSON command template", async () => {
    await call('Boiler flow temperature', { value: 55 }, [['tpl/boiler/set', '{"flow": 55}']]);
  });

  test("a thermostat's setpoint and mode go through their templates, on their own topics", async () => {
    await call('Hall thermostat', { action: 'set_temperature', temperature: 21.5 }, [['tpl/trv/target/set', '{"target_t": {"enabled": true, "value": 21.5}}']]);
    await call('Hall thermostat', { action: 'set_mode', mode: 'heat' }, [['tpl/trv/mode/set', 'HEAT']]);
  });

  test("a Zigbee2MQTT fan's speed step becomes its word", async () => {
    await call('Bedroom fan', { action: 'set_percentage', percentage: 2 }, [['tpl/fan/set/fan_mode', 'medium']]);
  });

  test("a select's option goes into the bridge's options request", async () => {
    await call('Log level', { option: 'debug' }, [['tpl/bridge/request/options', '{"options": {"advanced": {"log_level": "debug" } } }']]);
  });

  test("a cover's position is the template's `position`", async () => {
    await call('Garden blind', { action: 'set_position', position: 40 }, [['tpl/blind/position/set', '{"position": 40, "speed": "slow"}']]);
  });

  test('a template that fails with the call value is a failed result saying why, and nothing is sent', async () => {
    received.length = 0;
    const result = await hearth.tools.call(toolFor('Vent flap').name, { value: 30 }, OWNER);
    assert.equal(result.isError, true);
    assert.match(result.text!, /^failed: cannot build the command: .*command template cannot render 30/, result.text);
    assert.deepEqual(
      received.filter((m) => m.topic === 'tpl/vent/set'),
      [],
    );
    assert.equal(hearth.audit.tail(1)[0]!.outcome, 'not_sent', 'nothing left this process');
  });

  test('a template outside what Hearth can evaluate leaves the setting read-only, with a log line naming it', () => {
    const pump = hearth.bridge.registry.entities().find((e) => e.name === `${DEVICE.name} Pump speed`);
    assert.ok(pump, 'the pump is still discovered, as a reading');
    assert.ok(!hearth.tools.all().some((t) => t.capability === 'actuator' && t.meta.entityIds.includes(pump.id)), 'no actuator for it');
    assert.ok(logs.find(/to_the_moon/).length > 0, 'the log names the template');
  });
});
