// A Home Assistant discovery home (test/fixtures/homes/homeassistant-home.json: ESPHome, Shelly, Tasmota and
// Zigbee2MQTT shapes with suggested_area and entity_category) on mosquitto: each device in its suggested area,
// config and diagnostic entities not shown to agents, and a person's area kept by the device's identifier across a
// rediscovery under another name and a restart.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { discoveryHome, discoverySource, useFixtureHome } from '../helpers/fixture-home.js';
import { OWNER } from '../helpers/home.js';
import { waitFor } from '../helpers/wait.js';

const HOME = discoveryHome();

describe('a Home Assistant discovery home on mosquitto', () => {
  // Its Zigbee2MQTT devices are announced here only (no bridge/devices on this broker): a home read through Home
  // Assistant discovery alone, so Hearth's Zigbee2MQTT adapter is off (on, it reads them from bridge/devices).
  const home = useFixtureHome({
    name: 'ha-home',
    source: discoverySource(HOME),
    devices: 7,
    flags: { 'tools.shape': 'per-entity', 'discovery.zigbee2mqtt.enabled': false },
  });
  const byName = (name: string) => home.hearth.bridge.registry.devices().find((d) => d.name === name);

  it('puts each device in its suggested_area, and a device without one in none', () => {
    assert.equal(byName('Kettle')?.area, 'Kitchen');
    assert.equal(byName('Kettle')?.areaFrom, 'source');
    assert.equal(byName('Reading lamp')?.area, 'Living room');
    assert.equal(byName('Hallway motion')?.area, 'Hallway');
    assert.equal(byName('Desk lamp')?.area, undefined);
    for (const e of byName('Kettle')!.entities) assert.equal(e.area, 'Kitchen');
  });

  it('does not show agents entity_category config or diagnostic: no tools, unknown to get_state', async () => {
    const hidden = home.hearth.bridge.registry.entities().filter((e) => e.exposed === false);
    assert.deepEqual(hidden.map((e) => e.category).sort(), ['config', 'diagnostic', 'diagnostic', 'diagnostic', 'diagnostic', 'diagnostic', 'diagnostic']);
    const tooled = new Set(home.hearth.tools.all().flatMap((t) => t.meta.entityIds));
    for (const e of hidden) assert.ok(!tooled.has(e.id), `${e.id} has no tool`);
    const restart = hidden.find((e) => e.kind === 'button')!;
    assert.ok(!home.hearth.tools.all().some((t) => t.capability === 'actuator' && t.meta.entityIds.includes(restart.id)));
    const kitchen = await home.hearth.tools.call('get_state', { area: 'Kitchen' }, OWNER);
    assert.match(kitchen.text!, /Kettle/);
    assert.doesNotMatch(kitchen.text!, /Device temperature|41\.3/);
  });

  it("keeps a person's area by the device's identifier across a rediscovery under another name and a restart", async () => {
    home.hearth.home.setDeviceArea('Desk lamp', 'Office');
    home.hearth.home.setDeviceArea('Kettle', 'Garage');
    assert.equal(byName('Kettle')?.areaFrom, 'person');
    // The Shelly is renamed in its own UI: its configs come again with the new device name.
    for (const c of HOME.configs.filter((x) => x.topic.includes('shellyplus1pm'))) {
      const device = { ...(c.payload.device as Record<string, unknown>), name: 'Tea kettle' };
      await home.source.client.publishAsync(c.topic, JSON.stringify({ ...c.payload, device }), { retain: true, qos: 1 });
    }
    await waitFor('the renamed kettle', () => byName('Tea kettle'));
    assert.equal(byName('Tea kettle')?.area, 'Garage');
    await home.hearth.close();
    await home.open();
    assert.equal(byName('Tea kettle')?.area, 'Garage');
    assert.equal(byName('Desk lamp')?.area, 'Office');
    // Back to the source: its suggested_area again.
    home.hearth.home.setDeviceArea('Tea kettle', undefined);
    assert.equal(byName('Tea kettle')?.area, 'Kitchen');
  });
});
