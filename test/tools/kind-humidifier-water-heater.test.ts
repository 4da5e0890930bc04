// Humidifiers and water heaters (#31) from Home Assistant's MQTT discovery, on a real broker: on/off,
// target humidity and mode on their own topics through their templates; a water heater's operation
// mode, target temperature (HA's defaults: 43.3-60 °C) and power; each confirmed by what it reports.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type DiscoveredHome, openDiscoveredHome } from '../helpers/discovered-home.js';
import { waitFor } from '../helpers/wait.js';

describe('humidifier and water heater kinds', () => {
  let home: DiscoveredHome;

  before(async () => {
    home = await openDiscoveredHome({
      listen: ['hum/+/set', 'boiler/+/set'],
      respond: (topic, payload) => {
        switch (topic) {
          case 'hum/power/set':
            return [['hum/state', payload]];
          case 'hum/target/set':
            return [['hum/target', String((JSON.parse(payload) as { rh: number }).rh)]];
          case 'hum/mode/set':
            return [['hum/mode', payload.toLowerCase()]];
          case 'boiler/mode/set':
            return [['boiler/mode', payload]];
          case 'boiler/temp/set':
            return [['boiler/temp', payload]];
          case 'boiler/power/set':
            return [['boiler/mode', payload === 'ON' ? 'eco' : 'off']];
        }
        return undefined;
      },
      flags: { 'discovery.zigbee2mqtt.enabled': false },
    });
    await home.publish('homeassistant/humidifier/bedroom/config', {
      name: 'Bedroom humidifier',
      unique_id: 'bedroom_hum',
      command_topic: 'hum/power/set',
      state_topic: 'hum/state',
      target_humidity_command_topic: 'hum/target/set',
      target_humidity_command_template: '{"rh": {{ value }}}',
      target_humidity_state_topic: 'hum/target',
      mode_command_topic: 'hum/mode/set',
      mode_command_template: '{{ value | upper }}',
      mode_state_topic: 'hum/mode',
      modes: ['normal', 'eco', 'sleep'],
      min_humidity: 30,
      max_humidity: 80,
      current_humidity_topic: 'hum/current',
    });
    await home.publish('homeassistant/water_heater/boiler/config', {
      name: 'Boiler',
      unique_id: 'boiler',
      mode_command_topic: 'boiler/mode/set',
      mode_state_topic: 'boiler/mode',
      temperature_command_topic: 'boiler/temp/set',
      temperature_state_topic: 'boiler/temp',
      current_temperature_topic: 'boiler/current',
      power_command_topic: 'boiler/power/set',
    });
    await home.publish('hum/state', 'OFF');
    await home.publish('boiler/mode', 'eco');
    await waitFor('both', () => ['Bedroom humidifier', 'Boiler'].every((n) => home.hearth.bridge.registry.entities().some((e) => e.name === n)));
  });
  after(() => home?.close());

  it('a humidifier turns on, takes a target humidity and a mode through its templates, each confirmed', async () => {
    home.clear();
    assert.match((await home.call('Bedroom humidifier', { action: 'turn_on' })).text!, /^confirmed: .*: on/);
    assert.match((await home.call('Bedroom humidifier', { action: 'set_humidity', humidity: 45 })).text!, /^confirmed: .*target humidity 45%/);
    assert.match((await home.call('Bedroom humidifier', { action: 'set_mode', mode: 'sleep' })).text!, /^confirmed: .*mode sleep/);
    assert.deepEqual(
      home.received.map((m) => [m.topic, m.payload]),
      [
        ['hum/power/set', 'ON'],
        ['hum/target/set', '{"rh": 45}'],
        ['hum/mode/set', 'SLEEP'],
      ],
    );
  });

  it("a target outside the humidifier's own range, or an unknown mode, is refused before sending", async () => {
    home.clear();
    const low = await home.call('Bedroom humidifier', { action: 'set_humidity', humidity: 10 });
    assert.equal(low.isError, true);
    assert.match(low.text!, /30|minimum/);
    const mode = await home.call('Bedroom humidifier', { action: 'set_mode', mode: 'turbo' });
    assert.equal(mode.isError, true);
    assert.deepEqual(home.received, []);
  });

  it("a water heater's defaults are Home Assistant's: modes and 43.3-60 °C", () => {
    const boiler = home.entity('Boiler');
    assert.equal(boiler.kind, 'water_heater');
    assert.deepEqual(boiler.options.mode, ['off', 'eco', 'electric', 'gas', 'heat_pump', 'high_demand', 'performance']);
    assert.deepEqual(boiler.ranges.temperature, { min: 43.3, max: 60, step: 0.1 });
    assert.equal(boiler.unit, '°C');
  });

  it('a water heater sets its mode and temperature and powers off, each confirmed by what it reports', async () => {
    home.clear();
    assert.match((await home.call('Boiler', { action: 'set_mode', mode: 'performance' })).text!, /^confirmed: .*mode performance/);
    assert.match((await home.call('Boiler', { action: 'set_temperature', temperature: 55 })).text!, /^confirmed: .*target temperature 55 °C/);
    assert.match((await home.call('Boiler', { action: 'turn_off' })).text!, /^confirmed: .*mode off/);
    assert.match((await home.call('Boiler', { action: 'turn_on' })).text!, /^confirmed: .*mode eco/);
    assert.deepEqual(
      home.received.map((m) => [m.topic, m.payload]),
      [
        ['boiler/mode/set', 'performance'],
        ['boiler/temp/set', '55'],
        ['boiler/power/set', 'OFF'],
        ['boiler/power/set', 'ON'],
      ],
    );
    const hot = await home.call('Boiler', { action: 'set_temperature', temperature: 80 });
    assert.equal(hot.isError, true);
  });

  it('a water heater from a device file takes away mode on its own topic', async () => {
    const { parseDeviceFile } = await import('../../src/devices/loader.js');
    const { encodeCommand } = await import('../../src/devices/commands.js');
    const { toCommand } = await import('../../src/tools/parameters.js');
    const parsed = parseDeviceFile(
      'wh.yaml',
      'devices:\n  - id: wh\n    entities:\n      heater: { kind: water_heater, state_topic: wh/mode, attributes: { away_mode: { topic: wh/away } }, command_topics: { mode: wh/mode/set, away_mode: wh/away/set }, options: { mode: [eco, boost] } }\n',
    );
    assert.ok('devices' in parsed, JSON.stringify(parsed));
    const heater = parsed.devices[0]!.entities[0]!;
    assert.deepEqual(encodeCommand(heater, toCommand(heater, { action: 'set_away', away: true })), [{ topic: 'wh/away/set', payload: 'ON' }]);
    assert.throws(() => toCommand(heater, { action: 'set_away', away: 'yes' }), /"away" must be true or false/);
  });
});
