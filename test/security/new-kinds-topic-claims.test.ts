// #31's kinds command on topics of their own (a mower's start, pause and dock topics, a water heater's power
// topic, a vacuum's fan speed topic, a notify's message topic, an update's install topic): a discovery config
// that claims another device's command topic, a topic Hearth reads, or a source's control topic with any of them
// is refused like any other kind, and the owner keeps its topic. A Zigbee2MQTT group's scene list is cut, however
// long. Real broker (aedes), real SQLite file, Home Assistant discovery and Zigbee2MQTT's bridge/groups.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MAX_GROUP_SCENES } from '../../src/devices/discovery/zigbee2mqtt/groups.js';
import { type DiscoveredHome, openDiscoveredHome } from '../helpers/discovered-home.js';
import { OWNER } from '../helpers/home.js';
import { waitFor } from '../helpers/wait.js';
import { z2mEntry } from '../helpers/zigbee2mqtt.js';

const GROUPS = [
  { id: 4, friendly_name: 'Everything', members: [], scenes: Array.from({ length: 5000 }, (_, i) => ({ id: i % 300, name: `Scene ${i}` })) },
  // Zigbee2MQTT never names a group after a device: this one is waiting for the back door bulb to join.
  { id: 5, friendly_name: 'Back door', members: [], scenes: [{ id: 1, name: 'Squat' }] },
];

describe("security: the new kinds never take another device's topic", () => {
  let home: DiscoveredHome;
  const byName = (name: string) => home.hearth.bridge.registry.entities().find((e) => e.name === name);

  before(async () => {
    home = await openDiscoveredHome({ listen: ['owned/#'] });
    await home.publish('homeassistant/scene/movie/config', { name: 'Movie', unique_id: 'movie', command_topic: 'owned/movie/set' });
    await home.publish('homeassistant/sensor/porch/config', { name: 'Porch', unique_id: 'porch', state_topic: 'owned/porch/state' });
    await waitFor('the owners', () => byName('Movie') && byName('Porch'));
    await home.publish('homeassistant/lawn_mower/mower/config', {
      name: 'Mower',
      unique_id: 'mower',
      activity_state_topic: 'mower/state',
      start_mowing_command_topic: 'mower/start',
      dock_command_topic: 'owned/movie/set',
    });
    await home.publish('homeassistant/water_heater/boiler/config', {
      name: 'Boiler',
      unique_id: 'boiler',
      mode_command_topic: 'boiler/mode',
      power_command_topic: 'owned/movie/set',
    });
    await home.publish('homeassistant/vacuum/robo/config', {
      name: 'Robo',
      unique_id: 'robo',
      command_topic: 'robo/cmd',
      set_fan_speed_topic: 'owned/porch/state',
      supported_features: ['start', 'fan_speed'],
      fan_speed_list: ['low', 'high'],
    });
    await home.publish('homeassistant/notify/opener/config', { name: 'Opener', unique_id: 'opener', command_topic: 'zigbee2mqtt/bridge/request/permit_join' });
    await home.publish('homeassistant/update/fw/config', {
      name: 'Fw',
      unique_id: 'fw',
      state_topic: 'fw/state',
      command_topic: 'homeassistant/status',
      payload_install: 'offline',
    });
    await home.publish('zigbee2mqtt/bridge/state', { state: 'online' });
    await home.publish('zigbee2mqtt/bridge/devices', []);
    await home.publish('zigbee2mqtt/bridge/groups', GROUPS);
    await waitFor(
      'the claims refused and the group read',
      () =>
        ['mower', 'boiler', 'robo', 'opener', 'fw'].every((d) => home.hearth.bridge.registry.refusedClaims().some((r) => r.refused.deviceId === d)) &&
        home.hearth.bridge.registry.entities().some((e) => e.deviceId === 'everything'),
    );
  });
  after(() => home?.close());

  it('a claim on an owned, read or control topic is refused; the update stays readable without its install', () => {
    const refused = home.hearth.bridge.registry.refusedClaims();
    const of = (device: string) => refused.find((r) => r.refused.deviceId === device)!;
    assert.equal(of('mower').owner?.id, byName('Movie')!.id);
    assert.equal(of('boiler').owner?.id, byName('Movie')!.id);
    assert.equal(of('robo').topic, 'owned/porch/state');
    assert.equal(of('opener').topic, 'zigbee2mqtt/bridge/request/permit_join');
    for (const name of ['Mower', 'Boiler', 'Robo', 'Opener']) assert.equal(byName(name), undefined, `${name} has no entity`);
    const fw = byName('Fw')!;
    assert.equal(fw.commandTopic, undefined);
    assert.deepEqual(fw.payloads, {});
    assert.ok(!home.hearth.tools.all().some((t) => t.capability === 'actuator' && t.meta.entityIds.includes(fw.id)));
  });

  it('the owner still commands its topic, and only it', async () => {
    home.clear();
    const movie = byName('Movie')!;
    const tool = home.hearth.tools.all().find((t) => t.capability === 'actuator' && t.meta.entityIds.includes(movie.id))!;
    const result = await home.hearth.tools.call(tool.name, {}, OWNER);
    assert.match(result.text!, /^confirmed: activated the scene/);
    await waitFor('the scene command', () => home.received.length > 0);
    assert.deepEqual(home.received, [{ topic: 'owned/movie/set', payload: 'ON' }]);
  });

  it("a group's scene list is cut at the bound, each scene id once", () => {
    const scenes = home.hearth.bridge.registry.entities().filter((e) => e.deviceId === 'everything');
    assert.ok(scenes.length > 0 && scenes.length <= MAX_GROUP_SCENES, `${scenes.length} scenes`);
    assert.equal(new Set(scenes.map((e) => e.payloads.activate)).size, scenes.length);
  });

  it('a group named after a device keeps the set topic it held first; the device gets it once the group is removed and forgotten', async () => {
    const squat = () => home.hearth.bridge.registry.entities().find((e) => e.deviceId === 'back_door');
    assert.equal(squat()?.commandTopic, 'zigbee2mqtt/Back door/set', 'alone, the group is read');
    // Which of the two is forged cannot be told from the broker: the one that held the topic first keeps it.
    await home.publish('zigbee2mqtt/bridge/devices', [await z2mEntry('LED1545G12', '0x000b57fffec6a5b2', 'Back door')]);
    const refusal = await waitFor('the bulb refused', () =>
      home.hearth.bridge.registry.refusedClaims().find((r) => r.refused.kind === 'light' && r.topic === 'zigbee2mqtt/Back door/set'),
    );
    assert.equal(refusal.owner?.deviceId, 'back_door');
    assert.equal(squat()?.commandTopic, 'zigbee2mqtt/Back door/set');
    // Zigbee2MQTT drops the group: it is away, and still holds its topic.
    await home.publish(
      'zigbee2mqtt/bridge/groups',
      GROUPS.filter((g) => g.id !== 5),
    );
    const away = await waitFor(
      'the group away',
      () => !squat() && home.hearth.bridge.registry.refusedClaims().find((r) => r.refused.id === refusal.refused.id && r.awayOwner),
    );
    assert.equal(away.awayOwner?.split('.')[0], 'back_door');
    assert.equal(home.hearth.bridge.registry.entity(refusal.refused.id), undefined, 'the bulb still has no command');
    // A person says the group is gone: the bulb takes the topic.
    assert.ok(home.hearth.bridge.registry.forgetDevice('back_door').forgotten.length);
    const light = await waitFor('the bulb', () =>
      home.hearth.bridge.registry.entities().find((e) => e.kind === 'light' && e.commandTopic === 'zigbee2mqtt/Back door/set'),
    );
    assert.equal(light.id, refusal.refused.id);
    assert.deepEqual(
      home.hearth.bridge.registry.refusedClaims().filter((r) => r.refused.deviceId === light.deviceId),
      [],
    );
  });
});
