// Scenes (#31): Home Assistant's MQTT scene platform and the scenes Zigbee2MQTT lists on a device's
// endpoints, on a real broker: "activate movie time" is one call that sends exactly what the source
// expects, answers honestly (a scene has no state), and leaves one audit row.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type DiscoveredHome, openDiscoveredHome } from '../helpers/discovered-home.js';
import { actuatorTool } from '../helpers/home.js';
import { waitFor } from '../helpers/wait.js';
import { z2mEntry } from '../helpers/zigbee2mqtt.js';
import { type SimulatedZigbeeDevice, simulatedDevice } from '../helpers/zigbee2mqtt-converters.js';

describe('scene kind', () => {
  let home: DiscoveredHome;
  // A real double switch (Heiman HS2SW2A: endpoints left 1, right 2) with the scene "Evening" stored on both rockers.
  let wall: SimulatedZigbeeDevice;

  before(async () => {
    home = await openDiscoveredHome({ listen: ['scenes/#', 'zigbee2mqtt/+/set', 'zigbee2mqtt/Hallway/Wall switch/+/set', 'zigbee2mqtt/Lounge bulb/+/set'] });
    // Home Assistant's documented scene config: payload_on defaults to ON.
    await home.publish('homeassistant/scene/movie_time/config', {
      name: 'Movie time',
      unique_id: 'movie_time',
      command_topic: 'scenes/movie/set',
      device: { identifiers: ['scene_ctl'], name: 'Scenes' },
    });
    await home.publish('homeassistant/scene/dinner/config', {
      name: 'Dinner',
      unique_id: 'dinner',
      command_topic: 'scenes/dinner/set',
      payload_on: 'RECALL',
      device: { identifiers: ['scene_ctl'], name: 'Scenes' },
    });
    // A real bulb's definition, with the scenes Zigbee2MQTT lists on its endpoint.
    const bulb = { ...(await z2mEntry('LED1545G12', '0x000b57fffec6a5b2', 'Lounge bulb')), endpoints: { 1: { scenes: [{ id: 3, name: 'Reading' }] } } };
    await home.publish('zigbee2mqtt/bridge/state', { state: 'online' });
    await home.publish('zigbee2mqtt/Lounge bulb/availability', { state: 'online' });
    wall = await simulatedDevice('heiman', 'HS2SW2A/HS2SW2A-N', '0x0d6f0000a1b2c3d4', 'Hallway/Wall switch');
    // As Zigbee2MQTT 2.x lists them: every endpoint, with the name the definition gives it.
    wall.entry.endpoints = { 1: { name: 'left', scenes: [{ id: 1, name: 'Evening' }] }, 2: { name: 'right', scenes: [{ id: 1, name: 'Evening' }] } };
    await home.publish('zigbee2mqtt/Hallway/Wall switch/availability', { state: 'online' });
    await home.publish('zigbee2mqtt/bridge/devices', [bulb, wall.entry]);
    // A group's scenes, as Zigbee2MQTT lists them in bridge/groups.
    await home.publish('zigbee2mqtt/bridge/groups', [
      { id: 7, friendly_name: 'Lounge lights', members: [{ ieee_address: '0x000b57fffec6a5b2', endpoint: 1 }], scenes: [{ id: 2, name: 'Cosy' }] },
      { id: 8, friendly_name: 'No scenes', members: [], scenes: [] },
    ]);
    await waitFor('the scenes', () =>
      ['Scenes Movie time', 'Scenes Dinner', 'Reading', 'Evening (left)', 'Evening (right)'].every((n) =>
        home.hearth.bridge.registry.entities().some((e) => e.name === n),
      ),
    );
  });
  after(() => home?.close());

  it('Home Assistant scenes become scene entities with their payload', () => {
    const movie = home.entity('Scenes Movie time');
    assert.equal(movie.kind, 'scene');
    assert.deepEqual(movie.payloads, { activate: 'ON' });
    assert.deepEqual(home.entity('Scenes Dinner').payloads, { activate: 'RECALL' });
  });

  it('activating a scene sends payload_on once, says a scene has no state, and is one audited action', async () => {
    home.clear();
    const result = await home.call('Scenes Dinner', {});
    assert.equal(result.isError, undefined);
    assert.match(result.text!, /^confirmed: activated the scene .*Dinner.*no state to report/);
    await waitFor('the command at the device', () => home.received.length > 0);
    assert.deepEqual(home.received, [{ topic: 'scenes/dinner/set', payload: 'RECALL' }]);
    const [row] = home.hearth.audit.tail(1);
    assert.equal(row!.action, 'activate');
    assert.equal(row!.outcome, 'confirmed');
    assert.equal(row!.entityId, home.entity('Scenes Dinner').id);
  });

  it('a scene takes no arguments: anything else is refused before it is sent', async () => {
    home.clear();
    const result = await home.call('Scenes Movie time', { action: 'turn_off' });
    assert.equal(result.isError, true);
    assert.match(result.text!, /invalid arguments/);
    assert.deepEqual(home.received, []);
  });

  it('a Zigbee2MQTT scene is recalled with {"scene_recall": id} on the device\'s set topic', async () => {
    const reading = home.entity('Reading');
    assert.equal(reading.kind, 'scene');
    assert.ok(reading.aliases.includes('Lounge bulb Reading'));
    home.clear();
    const result = await home.call('Reading', {});
    assert.match(result.text!, /^confirmed: activated the scene/);
    await waitFor('the recall', () => home.received.length > 0);
    assert.deepEqual(home.received, [{ topic: 'zigbee2mqtt/Lounge bulb/set', payload: '{"scene_recall":3}' }]);
  });

  it('the same scene on both rockers of a double switch: two tools, each recalled on the endpoint that stores it', async () => {
    const tools = ['Evening (left)', 'Evening (right)'].map((n) => actuatorTool(home.hearth, home.entity(n).id).name);
    assert.deepEqual(tools, ['evening_left', 'evening_right']);
    const recalled: Array<{ id: string; topic: string; endpoint: number; sceneid: unknown }> = [];
    for (const name of ['Evening (left)', 'Evening (right)']) {
      home.clear();
      assert.match((await home.call(name, {})).text!, /^confirmed: activated the scene/);
      await waitFor(`the recall of ${name}`, () => home.received.length > 0);
      assert.equal(home.received.length, 1);
      const [{ topic, payload }] = home.received as [{ topic: string; payload: string }];
      // What Zigbee2MQTT does with it: <device>/<endpoint id>/set is that endpoint; its scene_recall converter sends
      // genScenes recall there.
      const endpoint = /^zigbee2mqtt\/Hallway\/Wall switch\/(\d+)\/set$/.exec(topic)?.[1];
      const r = await wall.set(payload, endpoint);
      assert.deepEqual(r.errors, []);
      const [recall] = r.calls.filter((c) => c.type === 'command' && c.cluster === 'genScenes' && c.command === 'recall') as Array<
        Extract<(typeof r.calls)[number], { type: 'command' }>
      >;
      recalled.push({ id: home.entity(name).id, topic, endpoint: recall!.endpoint, sceneid: recall!.payload.sceneid });
    }
    assert.deepEqual(recalled, [
      { id: 'hallway_wall_switch.scene_1', topic: 'zigbee2mqtt/Hallway/Wall switch/1/set', endpoint: 1, sceneid: 1 },
      { id: 'hallway_wall_switch.scene_1_ep2', topic: 'zigbee2mqtt/Hallway/Wall switch/2/set', endpoint: 2, sceneid: 1 },
    ]);
  });

  it("a bulb listed again with a second endpoint: its scene goes to its endpoint's topic at once, with no move to confirm", async () => {
    // A Philips Hue bulb lists endpoint 11 and Green Power's 242; a re-interview (or Zigbee2MQTT 2.x) shows both.
    // The scene held `<bulb>/set` and is now recalled on `<bulb>/1/set`: the same device, no rename.
    const bulb = {
      ...(await z2mEntry('LED1545G12', '0x000b57fffec6a5b2', 'Lounge bulb')),
      endpoints: { 1: { scenes: [{ id: 3, name: 'Reading' }] }, 242: {} },
    };
    await home.publish('zigbee2mqtt/bridge/devices', [bulb, wall.entry]);
    await waitFor(
      'the scene on its endpoint',
      () => home.hearth.bridge.registry.entity('lounge_bulb.scene_3')?.commandTopic === 'zigbee2mqtt/Lounge bulb/1/set',
    );
    assert.deepEqual(
      home.hearth.bridge.registry.refusedClaims().map((r) => r.refused.id),
      [],
      'nothing waits for a person: no move to confirm',
    );
    home.clear();
    assert.match((await home.call('Reading', {})).text!, /^confirmed: activated the scene/);
    await waitFor('the recall', () => home.received.length > 0);
    assert.deepEqual(home.received, [{ topic: 'zigbee2mqtt/Lounge bulb/1/set', payload: '{"scene_recall":3}' }]);
  });

  it("a Zigbee2MQTT group's scene is recalled on the group's set topic; a group without scenes gives nothing", async () => {
    const cosy = home.entity('Cosy');
    // A group's id comes from its name when first seen, as a device's does.
    assert.equal(cosy.deviceId, 'lounge_lights');
    assert.equal(
      home.hearth.bridge.registry.devices().some((d) => d.name === 'No scenes'),
      false,
    );
    home.clear();
    assert.match((await home.call('Cosy', {})).text!, /^confirmed: activated the scene/);
    await waitFor('the recall', () => home.received.length > 0);
    assert.deepEqual(home.received, [{ topic: 'zigbee2mqtt/Lounge lights/set', payload: '{"scene_recall":2}' }]);
  });

  it('grouped: one activate_scenes tool whose schema does not list the scenes', async () => {
    const { generateTools } = await import('../../src/tools/generator.js');
    const { tools } = generateTools(home.hearth.bridge.registry.entities(), { shape: 'grouped', groupAbove: 0 }, async () => ({ text: '' }));
    const scenes = tools.find((t) => t.name === 'activate_scenes')!;
    assert.ok(scenes, 'activate_scenes');
    assert.deepEqual(scenes.meta.actions, ['activate']);
    assert.equal(JSON.stringify(scenes.parameters).includes('Dinner'), false);
  });
});
