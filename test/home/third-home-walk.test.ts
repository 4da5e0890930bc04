// docs/your-home.md walked on a home it was not written from: test/fixtures/homes/zigbee2mqtt-third-home.json
// (Title Case areas `Living Room/Hue Color Lamp`, a lower-case path `office/desk_fan` beside `Office/Thermometer`,
// a roller shade, a kettle), published by the simulated Zigbee2MQTT on mosquitto. Each test is something that
// tripped a newcomer following the page on this home.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { useFixtureHome, zigbee2mqttSource } from '../helpers/fixture-home.js';
import { HOMES, type Z2mHomeFixture } from '../helpers/simulated-zigbee2mqtt.js';

const HOME = JSON.parse(readFileSync(join(HOMES, 'zigbee2mqtt-third-home.json'), 'utf8')) as Z2mHomeFixture;

describe('docs/your-home.md on the third Zigbee2MQTT home', () => {
  const home = useFixtureHome({ name: 'third-home-walk', source: zigbee2mqttSource(HOME), devices: HOME.devices.length - 1 });
  const device = (name: string) => {
    const d = home.hearth.bridge.registry.devices().find((x) => x.name === name);
    assert.ok(d, `${name} is a device: ${home.hearth.bridge.registry.devices().map((x) => x.name)}`);
    return d;
  };

  it("a roller shade's Reverse direction is a setting: not shown to agents, no tool beside the shade's own", () => {
    const shade = device('Roller shade');
    const reverse = shade.entities.find((e) => e.key === 'reverse_direction');
    assert.ok(reverse, shade.entities.map((e) => e.key).join(', '));
    assert.equal(reverse.category, 'config');
    assert.equal(
      home.hearth.bridge.registry.exposed().some((e) => e.id === reverse.id),
      false,
    );
    assert.deepEqual(
      home.hearth.tools
        .all()
        .map((t) => t.name)
        .filter((n) => n.startsWith('office_roller_shade') && n.includes('reverse')),
      [],
    );
  });

  it('an area written `office/desk_fan` by one device and `Office/Thermometer` by another is the Office, as the owner capitalised it', () => {
    assert.equal(device('desk_fan').area, 'Office');
    assert.equal(device('Thermometer').area, 'Office');
    assert.deepEqual(
      home.hearth.home
        .areas()
        .map((a) => a.name)
        .filter((n) => n.toLowerCase() === 'office'),
      ['Office'],
    );
  });
});
