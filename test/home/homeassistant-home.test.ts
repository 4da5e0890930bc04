// A Home Assistant discovery home (test/fixtures/homes/homeassistant-home.json: ESPHome, Shelly, Tasmota and
// Zigbee2MQTT shapes with suggested_area and entity_category) on mosquitto: each device in its suggested area,
// config and diagnostic entities not shown to agents, and a person's area kept by the device's identifier across a
// rediscovery under another name and a restart.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import type { Hearth } from '../../src/hearth.js';
import { startMosquitto, type TestBroker } from '../helpers/brokers.js';
import { OWNER, openHearth } from '../helpers/home.js';
import { logSink } from '../helpers/log-sink.js';
import { HOMES } from '../helpers/simulated-zigbee2mqtt.js';
import { waitFor } from '../helpers/wait.js';

interface HaHome {
  configs: Array<{ topic: string; payload: Record<string, unknown> }>;
  states: Record<string, unknown>;
}
const HOME = JSON.parse(readFileSync(join(HOMES, 'homeassistant-home.json'), 'utf8')) as HaHome;
const payload = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));

describe('a Home Assistant discovery home on mosquitto', () => {
  let broker: TestBroker;
  let pub: MqttClient;
  let hearth: Hearth;
  const dir = mkdtempSync(join(tmpdir(), 'hearth-ha-home-'));
  const logs = logSink('warn');
  const byName = (name: string) => hearth.bridge.registry.devices().find((d) => d.name === name);
  const open = async () => {
    hearth = await openHearth(broker.url, dir, logs.log, { 'tools.shape': 'per-entity' });
    await waitFor('the discovered home', () => hearth.bridge.registry.devices().length === 7);
  };

  before(async () => {
    broker = await startMosquitto();
    pub = await mqtt.connectAsync(broker.url, { protocolVersion: 5 });
    for (const c of HOME.configs) await pub.publishAsync(c.topic, JSON.stringify(c.payload), { retain: true, qos: 1 });
    for (const [topic, state] of Object.entries(HOME.states)) await pub.publishAsync(topic, payload(state), { retain: true, qos: 1 });
    await open();
  });
  after(async () => {
    await hearth?.close();
    await pub?.endAsync();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('puts each device in its suggested_area, and a device without one in none', () => {
    assert.equal(byName('Kettle')?.area, 'Kitchen');
    assert.equal(byName('Kettle')?.areaFrom, 'source');
    assert.equal(byName('Reading lamp')?.area, 'Living room');
    assert.equal(byName('Hallway motion')?.area, 'Hallway');
    assert.equal(byName('Desk lamp')?.area, undefined);
    for (const e of byName('Kettle')!.entities) assert.equal(e.area, 'Kitchen');
  });

  it('does not show agents entity_category config or diagnostic: no tools, unknown to get_state', async () => {
    const hidden = hearth.bridge.registry.entities().filter((e) => e.exposed === false);
    assert.deepEqual(hidden.map((e) => e.category).sort(), ['config', 'diagnostic', 'diagnostic', 'diagnostic', 'diagnostic', 'diagnostic', 'diagnostic']);
    const tooled = new Set(hearth.tools.all().flatMap((t) => t.meta.entityIds));
    for (const e of hidden) assert.ok(!tooled.has(e.id), `${e.id} has no tool`);
    const restart = hidden.find((e) => e.kind === 'button')!;
    assert.ok(!hearth.tools.all().some((t) => t.capability === 'actuator' && t.meta.entityIds.includes(restart.id)));
    const kitchen = await hearth.tools.call('get_state', { area: 'Kitchen' }, OWNER);
    assert.match(kitchen.text!, /Kettle/);
    assert.doesNotMatch(kitchen.text!, /Device temperature|41\.3/);
  });

  it("keeps a person's area by the device's identifier across a rediscovery under another name and a restart", async () => {
    hearth.home.setDeviceArea('Desk lamp', 'Office');
    hearth.home.setDeviceArea('Kettle', 'Garage');
    assert.equal(byName('Kettle')?.areaFrom, 'person');
    // The Shelly is renamed in its own UI: its configs come again with the new device name.
    for (const c of HOME.configs.filter((x) => x.topic.includes('shellyplus1pm'))) {
      const device = { ...(c.payload.device as Record<string, unknown>), name: 'Tea kettle' };
      await pub.publishAsync(c.topic, JSON.stringify({ ...c.payload, device }), { retain: true, qos: 1 });
    }
    await waitFor('the renamed kettle', () => byName('Tea kettle'));
    assert.equal(byName('Tea kettle')?.area, 'Garage');
    await hearth.close();
    await open();
    assert.equal(byName('Tea kettle')?.area, 'Garage');
    assert.equal(byName('Desk lamp')?.area, 'Office');
    // Back to the source: its suggested_area again.
    hearth.home.setDeviceArea('Tea kettle', undefined);
    assert.equal(byName('Tea kettle')?.area, 'Kitchen');
  });
});
