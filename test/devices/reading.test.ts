// How an entity is read, compared between what a source gave before and gives now (reading.ts): a Home Assistant
// config or a Zigbee2MQTT list converted twice. Transforms are closures made anew by every conversion: the same
// template, path or words read alike, another one does not, and one that says nothing counts as unchanged.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateComponent } from '../../src/devices/discovery/homeassistant/schema.js';
import { toEntity } from '../../src/devices/discovery/homeassistant/to-entity.js';
import { convertDevice } from '../../src/devices/discovery/zigbee2mqtt/device.js';
import type { Z2mExpose } from '../../src/devices/discovery/zigbee2mqtt/types.js';
import type { Entity } from '../../src/devices/model.js';
import { readingChanges as compared } from '../../src/devices/reading.js';

const quiet = { warn() {}, info() {} };

/** What of `after` is read otherwise than `before`, the parts read alike left out. */
function readingChanges(before: Entity, after: Entity): Record<string, unknown> | undefined {
  const c = compared(before, after);
  return c && Object.fromEntries(Object.entries(c).filter(([, v]) => v !== undefined));
}

/** A Home Assistant config as the adapter converts it, as one entity. */
function ha(platform: string, config: Record<string, unknown>): Entity {
  const c = toEntity(platform, validateComponent(platform, config), quiet);
  assert.ok('body' in c, JSON.stringify(c));
  return { ...c.body, id: 'kitchen_node.entity', key: 'entity', name: 'Entity', aliases: [], deviceId: 'kitchen_node' };
}

const TASMOTA = { state_topic: 'tele/kitchen/SENSOR', unit_of_measurement: '°C' };

describe('readings compared between two conversions', () => {
  it('a value template: the same text reads alike, another text does not', () => {
    const was = ha('sensor', { ...TASMOTA, value_template: '{{ value_json.AM2301.Temperature | float(0) | round(1) }}' });
    assert.equal(readingChanges(was, ha('sensor', { ...TASMOTA, value_template: '{{ value_json.AM2301.Temperature | float(0) | round(1) }}' })), undefined);
    assert.deepEqual(readingChanges(was, ha('sensor', { ...TASMOTA, value_template: '{{ value_json.DS18B20.Temperature | float(0) | round(1) }}' })), {
      value: 'changed',
    });
    // A template that is a plain path reads by that path: another path is another reading.
    const path = ha('sensor', { ...TASMOTA, value_template: '{{ value_json.AM2301.Temperature }}' });
    assert.deepEqual(readingChanges(path, ha('sensor', { ...TASMOTA, value_template: '{{ value_json.DS18B20.Temperature }}' })), { value: 'changed' });
    assert.deepEqual(readingChanges(path, was), { value: 'changed' });
  });

  it('the same reading on another topic has moved; one no longer read at all is read otherwise', () => {
    const was = ha('sensor', { ...TASMOTA, value_template: '{{ value_json.AM2301.Temperature | float(0) }}' });
    const moved = ha('sensor', { ...TASMOTA, state_topic: 'tele/kitchen2/SENSOR', value_template: '{{ value_json.AM2301.Temperature | float(0) }}' });
    assert.deepEqual(readingChanges(was, moved), { value: 'moved' });
    assert.deepEqual(readingChanges(was, { ...was, stateTopic: undefined }), { value: 'changed' });
  });

  it('a reading where none was before is added: a state topic given, an attribute new', () => {
    const was = ha('sensor', { ...TASMOTA, value_template: '{{ value_json.AM2301.Temperature | float(0) }}' });
    assert.deepEqual(readingChanges({ ...was, stateTopic: undefined }, was), { value: 'added' });
    const withHumidity = { ...was, attributes: { ...was.attributes, humidity: { path: 'AM2301.Humidity' } } };
    assert.deepEqual(readingChanges(was, withHumidity), { attributes: { humidity: 'added' } });
    assert.deepEqual(readingChanges(withHumidity, was), { attributes: { humidity: 'changed' } }, 'one no longer read: what it read goes');
  });

  it('words: a read-only switch reads through its vocabulary, a siren through a JSON field of its template', () => {
    // A command template Hearth cannot evaluate: the switch is kept as a sensor that reads its words.
    const plug = (on: string) =>
      ha('switch', {
        command_topic: 'cmnd/plug/POWER',
        command_template: '{{ value | frobnicate }}',
        state_topic: 'stat/plug/POWER',
        state_on: on,
        state_off: 'OFF',
        value_template: '{{ value | upper }}',
      });
    assert.equal(plug('ON').kind, 'sensor');
    assert.equal(readingChanges(plug('ON'), plug('ON')), undefined);
    assert.deepEqual(readingChanges(plug('ON'), plug('1')), { value: 'changed' });
    const siren = (template: string) => ha('siren', { command_topic: 'siren/set', state_topic: 'siren/state', state_value_template: template });
    assert.equal(readingChanges(siren('{{ value_json.alarm | tojson }}'), siren('{{ value_json.alarm | tojson }}')), undefined);
    const changes = readingChanges(siren('{{ value_json.alarm | tojson }}'), siren('{{ value_json.siren | tojson }}'));
    assert.equal(changes?.value, 'changed');
    assert.deepEqual(changes?.attributes, { tone: 'changed', volume_level: 'changed', duration: 'changed' });
  });

  it('a colour light: each part of its comma-separated state, read through its template', () => {
    const light = (template: string) =>
      ha('light', { command_topic: 'l/set', state_topic: 'l/state', rgb_command_topic: 'l/rgb/set', rgb_state_topic: 'l/rgb', rgb_value_template: template });
    assert.equal(readingChanges(light('{{ value_json.rgb | join(",") }}'), light('{{ value_json.rgb | join(",") }}')), undefined);
    assert.deepEqual(readingChanges(light('{{ value_json.rgb | join(",") }}'), light('{{ value_json.color | join(",") }}'))?.attributes, {
      red: 'changed',
      green: 'changed',
      blue: 'changed',
    });
  });

  it('availability: its template and words are read otherwise, its topic moves', () => {
    const node = (availability: Record<string, unknown>) =>
      ha('sensor', { ...TASMOTA, value_template: '{{ value_json.AM2301.Temperature }}', ...availability });
    const was = node({ availability_topic: 'tele/kitchen/LWT', payload_available: 'Online', payload_not_available: 'Offline' });
    assert.equal(
      readingChanges(was, node({ availability_topic: 'tele/kitchen/LWT', payload_available: 'Online', payload_not_available: 'Offline' })),
      undefined,
    );
    assert.deepEqual(readingChanges(was, node({ availability_topic: 'tele/kitchen/LWT', payload_available: 'online', payload_not_available: 'offline' })), {
      availability: 'changed',
    });
    assert.deepEqual(
      readingChanges(
        was,
        node({
          availability_topic: 'tele/kitchen/LWT',
          availability_template: '{{ value | title }}',
          payload_available: 'Online',
          payload_not_available: 'Offline',
        }),
      ),
      { availability: 'changed' },
    );
    assert.deepEqual(readingChanges(was, node({ availability_topic: 'tele/kitchen2/LWT', payload_available: 'Online', payload_not_available: 'Offline' })), {
      availability: 'moved',
    });
  });

  it('a transform that says nothing of what it reads cannot be compared: unchanged', () => {
    const was = ha('sensor', TASMOTA);
    assert.equal(readingChanges({ ...was, transform: (m) => m.text() }, { ...was, transform: (m) => m.json() }), undefined);
  });

  it('a Zigbee2MQTT list converted again reads alike; a binary whose values changed does not', () => {
    const exposes = (on: unknown, off: unknown): Z2mExpose[] => [
      { type: 'binary', name: 'contact', property: 'contact', access: 1, value_on: on, value_off: off },
      { type: 'numeric', name: 'battery', property: 'battery', access: 1, unit: '%' },
    ];
    const convert = (on: unknown, off: unknown) =>
      convertDevice(
        { ieee_address: '0x00158d0004a1b2c3', friendly_name: 'Back door', definition: { model: 'MCCGQ11LM', vendor: 'Aqara', exposes: exposes(on, off) } },
        { prefix: 'zigbee2mqtt', deviceAvailability: true },
      ).device!.entities;
    const was = convert(false, true);
    for (const [i, e] of convert(false, true).entries()) assert.equal(readingChanges(was[i]!, e), undefined, e.id);
    const flipped = convert(true, false);
    assert.deepEqual(readingChanges(was[0]!, flipped[0]!), { value: 'changed' });
    assert.equal(readingChanges(was[1]!, flipped[1]!), undefined);
  });
});
