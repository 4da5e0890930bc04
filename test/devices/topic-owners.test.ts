// Who owns a command topic: the first claimant in rank order, and with it every topic below it and above it
// (a device commanded on `<cmd>` takes `<cmd>/state` too), except for entities of its own device and source.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assignStateTopicReaders, assignTopicOwners, moversOf, orderWithHolders, type TopicClaim } from '../../src/devices/topic-owners.js';
import { zigbeeLight } from './helpers.js';

const claim = (device: string, key: string, commandTopic: string, source = 'zigbee2mqtt'): TopicClaim => ({
  entity: zigbeeLight(device, key, `${device} ${key}`, { commandTopic }),
  source,
});

describe('command topic owners', () => {
  it("refuses another device's entity on a topic under an owned one, naming the owner's topic", () => {
    const { owners, refused } = assignTopicOwners([claim('front_door', 'lock', 'z/front_door/set'), claim('helper', 'switch', 'z/front_door/set/state')]);
    assert.equal(owners.get('z/front_door/set')?.id, 'front_door.lock');
    assert.equal(refused.get('helper.switch')?.owner?.id, 'front_door.lock');
    assert.equal(refused.get('helper.switch')?.ownerTopic, 'z/front_door/set');
  });

  it("refuses another device's entity on a topic above an owned one", () => {
    const { refused } = assignTopicOwners([claim('front_door', 'lock', 'z/front_door/set/state'), claim('helper', 'switch', 'z/front_door/set')]);
    assert.equal(refused.get('helper.switch')?.owner?.id, 'front_door.lock');
    assert.equal(refused.get('helper.switch')?.ownerTopic, 'z/front_door/set/state');
  });

  it('lets entities of the same device and source share a topic and the topics below it', () => {
    const { refused } = assignTopicOwners([claim('front_door', 'lock', 'z/front_door/set'), claim('front_door', 'battery', 'z/front_door/set/battery')]);
    assert.equal(refused.size, 0);
  });

  it('holds the same device from another source to the rule, and a name that only starts alike is no sub-topic', () => {
    const { refused } = assignTopicOwners([
      claim('front_door', 'lock', 'z/front_door/set'),
      claim('front_door', 'copy', 'z/front_door/set/x', 'homeassistant'),
      claim('front', 'light', 'z/front'),
      claim('front_door_2', 'lock', 'z/front_door/setting'),
    ]);
    assert.deepEqual([...refused.keys()], ['front_door.copy']);
  });

  it('names another device below a topic even when the first one there is the claimant’s own', () => {
    const { refused } = assignTopicOwners([claim('hub', 'a', 'z/hub/set/a'), claim('other', 'b', 'z/hub/set/b'), claim('hub', 'all', 'z/hub/set')]);
    assert.equal(refused.get('hub.all')?.owner?.id, 'other.b');
    assert.equal(refused.get('hub.all')?.ownerTopic, 'z/hub/set/b');
  });

  describe('owners that are away', () => {
    // What the memory holds: entity id -> its command topics; ranks by first sight.
    const remembered = new Map([
      ['front_door.lock', ['z/front_door/set']],
      ['front_door.battery', ['z/front_door/set']],
    ]);
    const ranks = new Map([
      ['old_switch.switch', 1],
      ['front_door.lock', 2],
      ['front_door.battery', 3],
      ['front_door.sound', 4],
      ['newcomer.light', 5],
    ]);
    const rank = (ids: readonly string[]) => new Map(ids.map((id) => [id, ranks.get(id) ?? 99]));

    it('hold their topic against a newcomer, and against an older entity moving onto it', () => {
      const order = orderWithHolders(
        [],
        [claim('old_switch', 'switch', 'z/front_door/set'), claim('newcomer', 'light', 'z/front_door/set/state')],
        remembered,
        rank,
      );
      const { owners, refused } = assignTopicOwners(order);
      assert.equal(refused.get('old_switch.switch')?.awayOwner, 'front_door.lock');
      assert.equal(refused.get('newcomer.light')?.awayOwner, 'front_door.lock');
      assert.equal(refused.get('newcomer.light')?.ownerTopic, 'z/front_door/set');
      assert.equal(owners.size, 0, 'an owner that is away is not listed as an owner of the home');
    });

    it('let their own device share it (an entity it gained meanwhile), and take it back when they return', () => {
      const back = orderWithHolders([], [claim('front_door', 'sound', 'z/front_door/set'), claim('front_door', 'lock', 'z/front_door/set')], remembered, rank);
      const { owners, refused } = assignTopicOwners(back);
      assert.equal(refused.size, 0);
      assert.equal(owners.get('z/front_door/set')?.id, 'front_door.lock');
    });

    it('give way to a device file, which outranks every discovered entity', () => {
      const order = orderWithHolders([claim('wired', 'lock', 'z/front_door/set', 'files')], [claim('newcomer', 'light', 'z/front_door/set')], remembered, rank);
      const { owners, refused } = assignTopicOwners(order);
      assert.equal(owners.get('z/front_door/set')?.id, 'wired.lock');
      assert.equal(refused.get('newcomer.light')?.owner?.id, 'wired.lock');
    });
  });

  describe('owners their source moves (a rename)', () => {
    const remembered = new Map([
      ['front_door.lock', ['z/Front door/set']],
      ['front_door.sound', ['z/Front door/set']],
    ]);
    const rank = (ids: readonly string[]) => new Map(ids.map((id, i) => [id, i]));
    const renamed = [claim('front_door', 'lock', 'z/Porch/set'), claim('front_door', 'sound', 'z/Porch/set'), claim('front_door', 'beep', 'z/Porch/set')];

    it('keep what they hold and get nothing new, with their new entities; a newcomer on the old topic is refused', () => {
      const found = [...renamed, claim('newcomer', 'lock', 'z/Front door/set')];
      const movers = moversOf(found, remembered);
      // The lock and its sibling moved; the device's new entity goes where the device went, so it waits with it.
      assert.deepEqual([...movers.keys()].sort(), ['front_door.beep', 'front_door.lock', 'front_door.sound']);
      assert.deepEqual(movers.get('front_door.lock')?.held, ['z/Front door/set']);
      assert.deepEqual(movers.get('front_door.beep')?.held, []);
      const { owners, refused } = assignTopicOwners(orderWithHolders([], found, remembered, rank, movers));
      assert.equal(refused.get('newcomer.lock')?.ownerMoving, true);
      assert.match(refused.get('newcomer.lock')?.awayOwner ?? '', /^front_door\./);
      assert.equal(owners.get('z/Porch/set'), undefined, 'no one takes the new topic meanwhile');
      assert.equal(owners.get('z/Front door/set'), undefined);
    });

    describe("a Zigbee2MQTT scene and its device's endpoint topics", () => {
      const scene = (device: string, topic: string, source = 'zigbee2mqtt'): TopicClaim => ({
        entity: zigbeeLight(device, 'scene_3', `${device} scene 3`, { kind: 'scene', commandTopic: topic }),
        source,
      });
      const bulb = (topic = 'z/Lounge bulb/set') => claim('lounge_bulb', 'light', topic);
      const held = new Map([
        ['lounge_bulb.scene_3', ['z/Lounge bulb/set']],
        ['lounge_bulb.light', ['z/Lounge bulb/set']],
      ]);

      it("is no mover going from its device's set topic to its endpoint's, and back", () => {
        assert.equal(moversOf([bulb(), scene('lounge_bulb', 'z/Lounge bulb/11/set')], held).size, 0);
        const onEndpoint = new Map([...held, ['lounge_bulb.scene_3', ['z/Lounge bulb/11/set']]]);
        assert.equal(moversOf([bulb(), scene('lounge_bulb', 'z/Lounge bulb/set')], onEndpoint).size, 0);
        // From one endpoint to another, the scene is not where it was: a move.
        assert.equal(moversOf([bulb(), scene('lounge_bulb', 'z/Lounge bulb/2/set')], onEndpoint).size, 1);
      });

      it('moves with its device renamed, from another source, or on a device of scenes alone', () => {
        // Renamed `Lounge bulb/1` (a name Zigbee2MQTT refuses: forged): the light moves, and the scene with it.
        assert.deepEqual([...moversOf([bulb('z/Lounge bulb/1/set'), scene('lounge_bulb', 'z/Lounge bulb/1/set')], held).keys()].sort(), [
          'lounge_bulb.light',
          'lounge_bulb.scene_3',
        ]);
        assert.equal(moversOf([bulb(), scene('lounge_bulb', 'z/Lounge bulb/1/set', 'homeassistant')], held).size, 1);
        // Nothing else of the device claims `z/Lounge bulb/set`: nothing says the device is still named so.
        assert.equal(moversOf([scene('lounge_bulb', 'z/Lounge bulb/1/set')], held).size, 1);
      });

      it('only a scene: a light renamed `Hall switch/1` from `Hall switch/2`, or `12` renamed `34`, moves', () => {
        assert.equal(moversOf([claim('hall_switch_2', 'light', 'z/Hall switch/1/set')], new Map([['hall_switch_2.light', ['z/Hall switch/2/set']]])).size, 1);
        assert.equal(moversOf([claim('d12', 'light', 'z/34/set')], new Map([['d12.light', ['z/12/set']]])).size, 1);
        assert.equal(moversOf([claim('lamp_2', 'light', 'z/Lamp/set')], new Map([['lamp_2.light', ['z/Lamp/2/set']]])).size, 1);
      });

      it("a device of scenes alone listed with a second endpoint: its set topic is no newcomer's", () => {
        // Lamp's scene held `z/Lamp/set`; a forged list gives Lamp a second endpoint and a newcomer also named `Lamp`.
        const remembered = new Map([['lamp.scene_3', ['z/Lamp/set']]]);
        const found = [scene('lamp', 'z/Lamp/1/set'), claim('lamp_2', 'light', 'z/Lamp/set')];
        const rank = (ids: readonly string[]) => new Map(ids.map((id) => [id, id.startsWith('lamp.') ? 1 : 2]));
        const movers = moversOf(found, remembered);
        const { owners } = assignTopicOwners(orderWithHolders([], found, remembered, rank, movers));
        assert.notEqual(owners.get('z/Lamp/set')?.id, 'lamp_2.light');
      });

      it('takes nothing an away device holds on the endpoint topic', () => {
        // `Lamp/2` was a device of its own (away now), holding `z/Lamp/2/set`; Lamp's scene, first seen, now claims it.
        const remembered = new Map([
          ['lamp.scene_3', ['z/Lamp/set']],
          ['lamp.light', ['z/Lamp/set']],
          ['lamp_2.light', ['z/Lamp/2/set']],
        ]);
        const found = [claim('lamp', 'light', 'z/Lamp/set'), scene('lamp', 'z/Lamp/2/set')];
        const rank = (ids: readonly string[]) => new Map(ids.map((id) => [id, id.startsWith('lamp.') ? 1 : 2]));
        const movers = moversOf(found, remembered);
        assert.equal(movers.size, 0);
        const { owners, refused } = assignTopicOwners(orderWithHolders([], found, remembered, rank, movers));
        assert.equal(refused.get('lamp.scene_3')?.awayOwner, 'lamp_2.light');
        assert.equal(owners.get('z/Lamp/2/set'), undefined);
      });
    });

    it('are no movers when they claim only what they hold (a new entity of theirs among them)', () => {
      assert.equal(moversOf([claim('front_door', 'lock', 'z/Front door/set'), claim('front_door', 'beep', 'z/Front door/set')], remembered).size, 0);
    });
  });
});

describe('state topic readers', () => {
  const reads = (device: string, key: string, stateTopic: string, source = 'zigbee2mqtt'): TopicClaim => ({
    entity: zigbeeLight(device, key, `${device} ${key}`, { stateTopic }),
    source,
  });

  it("refuses another device's entity reading an owned state topic, naming whose it is; the device's own entities share it", () => {
    const refused = assignStateTopicReaders(
      [],
      [
        reads('front_door', 'lock', 'z/Front door'),
        reads('front_door', 'battery', 'z/Front door'),
        reads('contact', 'door', 'z/Front door', 'homeassistant'),
        reads('front_door', 'copy', 'z/Front door', 'homeassistant'),
      ],
    );
    assert.deepEqual([...refused.keys()].sort(), ['contact.door', 'front_door.copy']);
    assert.equal(refused.get('contact.door')?.owner?.id, 'front_door.lock');
    assert.equal(refused.get('contact.door')?.read, true);
  });

  it('device files that take commands share among themselves and outrank every discovered reader; configs naming no device share among themselves only', () => {
    const refused = assignStateTopicReaders(
      [reads('meter', 'power', 'tele/meter/SENSOR', 'files'), reads('meter_copy', 'voltage', 'tele/meter/SENSOR', 'files')],
      [
        reads('meter_power', 'sensor', 'tele/meter/SENSOR', 'homeassistant'),
        reads('weather_a', 'sensor', 'weather/json', 'homeassistant'),
        reads('weather_b', 'sensor', 'weather/json', 'homeassistant'),
        reads('weather_c', 'sensor', 'weather/json', 'homie'),
        reads('station', 'sensor', 'weather/json', 'homeassistant'),
      ],
      new Set(['weather_a', 'weather_b', 'weather_c']),
    );
    // The named station reads weather/json (configs naming no device never take a named device's topic).
    assert.deepEqual([...refused.keys()].sort(), ['meter_power.sensor', 'weather_a.sensor', 'weather_b.sensor', 'weather_c.sensor']);
    assert.equal(refused.get('meter_power.sensor')?.owner?.id, 'meter.power');
  });

  it("a person's file that only reads (an extra sensor off a discovered device's JSON) shares the topic: the device stays", () => {
    const extra: TopicClaim = { entity: { ...reads('lock_extras', 'battery', 'z/Front door', 'files').entity, commandTopic: undefined }, source: 'files' };
    const refused = assignStateTopicReaders([extra], [reads('front_door', 'lock', 'z/Front door'), reads('contact', 'door', 'z/Front door', 'homeassistant')]);
    // The lock keeps its topic; a forged contact on it is still refused, naming the lock.
    assert.deepEqual([...refused.keys()], ['contact.door']);
    assert.equal(refused.get('contact.door')?.owner?.id, 'front_door.lock');
  });

  it("a person's device that takes commands owns its own state topic; an attribute it reads off a discovered device's topic is shared", () => {
    const heater: TopicClaim = {
      entity: {
        ...reads('heater', 'climate', 'custom/heater', 'files').entity,
        attributes: { current_temperature: { topic: 'z/Living room sensor', path: 'temperature' } },
      },
      source: 'files',
    };
    const refused = assignStateTopicReaders(
      [heater],
      [reads('sensor', 'temperature', 'z/Living room sensor'), reads('forged', 'x', 'custom/heater', 'homeassistant')],
    );
    assert.deepEqual([...refused.keys()], ['forged.x']);
    assert.equal(refused.get('forged.x')?.owner?.id, 'heater.climate');
  });

  it("what a person's file only reads it shares with the first discovered device to read it, and with no other", () => {
    const door: TopicClaim = { entity: { ...reads('door', 'contact', 'home/door', 'files').entity, commandTopic: undefined }, source: 'files' };
    const refused = assignStateTopicReaders(
      [door],
      [reads('first', 'contact', 'home/door', 'homeassistant'), reads('second', 'contact', 'home/door', 'homeassistant')],
    );
    assert.deepEqual([...refused.keys()], ['second.contact']);
    assert.equal(refused.get('second.contact')?.owner?.id, 'first.contact');
  });

  it('a config naming no device never takes a topic a named device reads, whichever came first', () => {
    const refused = assignStateTopicReaders(
      [],
      [reads('hand_written', 'sensor', 'tele/plug/SENSOR', 'homeassistant'), reads('plug', 'energy', 'tele/plug/SENSOR', 'homeassistant')],
      new Set(['hand_written']),
    );
    assert.deepEqual([...refused.keys()], ['hand_written.sensor']);
    assert.equal(refused.get('hand_written.sensor')?.owner?.id, 'plug.energy');
  });

  describe('readers that are away', () => {
    const remembered = new Map([
      ['front_door.lock', ['z/Front door']],
      ['front_door.battery', ['z/Front door']],
    ]);

    it('an away device holds what it read: a newcomer on it is refused, naming the away entity; a new entity of the device shares it', () => {
      const refused = assignStateTopicReaders(
        [],
        [reads('contact', 'door', 'z/Front door', 'homeassistant'), reads('front_door', 'linkquality', 'z/Front door')],
        new Set(),
        new Map([...remembered, ['contact.door', []]]),
      );
      assert.deepEqual([...refused.keys()], ['contact.door']);
      assert.equal(refused.get('contact.door')?.awayOwner, 'front_door.lock');
      assert.equal(refused.get('contact.door')?.owner, undefined);
      assert.equal(refused.get('contact.door')?.read, true);
    });

    it('a present device holding what it read keeps it from an entity ranked before it that now reads it too', () => {
      // `older` is ranked first (found comes in rank order), but the topic was the lock's.
      const refused = assignStateTopicReaders(
        [],
        [reads('older', 'sensor', 'z/Front door', 'homeassistant'), reads('front_door', 'lock', 'z/Front door')],
        new Set(),
        remembered,
      );
      assert.deepEqual([...refused.keys()], ['older.sensor']);
      assert.equal(refused.get('older.sensor')?.owner?.id, 'front_door.lock');
    });

    it('a moving device holds its topic, said as moving; a device file that takes commands outranks an away one, which holds nothing there', () => {
      const moving = assignStateTopicReaders(
        [],
        [reads('contact', 'door', 'z/Front door', 'homeassistant')],
        new Set(),
        remembered,
        new Set(['front_door.lock']),
      );
      assert.equal(moving.get('contact.door')?.ownerMoving, true);
      const file = reads('hand_lock', 'lock', 'z/Front door', 'files');
      const refused = assignStateTopicReaders([file], [reads('contact', 'door', 'z/Front door', 'homeassistant')], new Set(), remembered);
      assert.equal(refused.get('contact.door')?.owner?.id, 'hand_lock.lock');
      assert.equal(refused.get('contact.door')?.awayOwner, undefined);
    });
  });
});
