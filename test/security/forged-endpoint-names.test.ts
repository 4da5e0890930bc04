// A forged Zigbee2MQTT list naming a device `<name>/<digits>` (a name Zigbee2MQTT itself refuses: its
// validateFriendlyName says 'Friendly name cannot end with a "/DIGIT"') must not reach another device. Zigbee2MQTT
// sends `Hall switch/2/set` to the Hall switch's endpoint 2 when no device is named so: a device of that name would
// command the switch's relay under its own name and rules, and a rename to `Front door lock/1` would look like a
// move to the lock's own endpoint. Hearth refuses such names (naming.ts refusedFriendlyName, listed with the reason)
// and counts only a scene's move between its device's set topic and its endpoints' as no move (topic-owners.ts
// endpointTwins). Found by review: the lock's topic went to a forged newcomer; a light's permission switched a relay.
// The same holds for an endpoint's name: `Hall switch/left/set` is the Hall switch's left rocker unless Zigbee2MQTT
// really has a device or group of that name (it accepts such names since 1.36), which a list cannot prove; Hearth
// refuses `<device>/<endpoint name>` where the list has that device with that endpoint.
// Real broker (aedes), real SQLite file, the real models' exposes (zigbee-herdsman-converters).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { commandTopicsOf } from '../../src/devices/commands.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { type ServedHearth, servedHearth } from '../helpers/http-home.js';
import { waitFor } from '../helpers/wait.js';
import { z2mEntry } from '../helpers/zigbee2mqtt.js';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'z2m');
const LIST: Array<{ friendly_name: string; ieee_address: string }> = JSON.parse(readFileSync(join(FIXTURES, 'bridge-devices.json'), 'utf8'));
const json = (payload: unknown) => (typeof payload === 'string' ? payload : JSON.stringify(payload));

/** A broker, a listening Zigbee2MQTT (every `<name>/set` publish recorded), a forger, and a Hearth on them. */
function forgedHome(prepare: Parameters<typeof servedHearth>[2]) {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-twin-rename-'));
  const ctx: { broker: TestBroker; zigbee: MqttClient; forger: MqttClient; sent: string[]; home: ServedHearth } = {
    broker: undefined as unknown as TestBroker,
    zigbee: undefined as unknown as MqttClient,
    forger: undefined as unknown as MqttClient,
    sent: [],
    home: servedHearth(() => ctx.broker.url, dir, prepare),
  };
  const start = async (list: unknown[]) => {
    ctx.broker = await startAedes();
    ctx.zigbee = await mqtt.connectAsync(ctx.broker.url, { protocolVersion: 4 });
    ctx.zigbee.on('message', (topic, payload) => ctx.sent.push(`${topic} ${payload.toString()}`));
    await ctx.zigbee.subscribeAsync(['zigbee2mqtt/+/set', 'zigbee2mqtt/+/+/set'], { qos: 1 });
    ctx.forger = await mqtt.connectAsync(ctx.broker.url, { protocolVersion: 4 });
    await ctx.zigbee.publishAsync('zigbee2mqtt/bridge/info', readFileSync(join(FIXTURES, 'bridge-info.json'), 'utf8'), { qos: 1, retain: true });
    await ctx.zigbee.publishAsync('zigbee2mqtt/bridge/devices', json(list), { qos: 1, retain: true });
    await ctx.home.open();
  };
  const stop = async () => {
    await ctx.home.close();
    await ctx.zigbee?.endAsync(true);
    await ctx.forger?.endAsync(true);
    await ctx.broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  return { ctx, start, stop };
}

describe('security: a forged rename to `Front door lock/1` beside a newcomer named `Front door lock`', () => {
  const LOCK = 'front_door_lock.lock';
  const LOCK_SET = 'zigbee2mqtt/Front door lock/set';
  const { ctx, start, stop } = forgedHome((hearth) =>
    hearth.policy.add({ subject: 'role:family', targetType: 'kind', target: 'lock', action: 'actuate', effect: 'allow', note: 'test: family locks' }),
  );
  const registry = () => ctx.home.hearth.bridge.registry;
  before(async () => {
    await start(LIST);
    await waitFor('the lock', () => ctx.home.entity(LOCK)?.commandTopic === LOCK_SET && ctx.home.actuatorToolOf(LOCK));
  });
  after(stop);

  it('the forged name is refused, the lock holds its topic while away, the newcomer gets nothing', async () => {
    const newcomer = await z2mEntry('YRD426NRSC', '0x00deadbeef000001', 'Front door lock');
    const forged = [...LIST.map((d) => (d.friendly_name === 'Front door lock' ? { ...d, friendly_name: 'Front door lock/1' } : d)), newcomer];
    await ctx.forger.publishAsync('zigbee2mqtt/bridge/devices', json(forged), { qos: 1, retain: true });
    // The forged list is read once the newcomer's lock is in the home or refused.
    const other = (id: string) => id.endsWith('.lock') && id !== LOCK;
    await waitFor(
      'the forged list read',
      () =>
        registry()
          .entities()
          .some((e) => other(e.id)) ||
        registry()
          .refusedClaims()
          .some((r) => other(r.refused.id)),
    );
    // Nothing but the lock commands the lock's topic: else a device the forger made up unlocks the real lock.
    const takers = registry()
      .entities()
      .filter((e) => e.commandTopic === LOCK_SET && e.id !== LOCK)
      .map((e) => e.id);
    assert.deepEqual(takers, [], `the real lock's topic ${LOCK_SET} went to ${takers.join(', ')}`);
    // The forged entry is left out, named, with the reason; the lock is away, holding its topic, until a person
    // forgets it or Zigbee2MQTT lists it again as it is.
    assert.equal(ctx.home.entity(LOCK), undefined);
    const refusedNewcomer = registry()
      .refusedClaims()
      .find((r) => other(r.refused.id));
    assert.equal(refusedNewcomer?.awayOwner?.split('.')[0], 'front_door_lock', 'held by the away lock');
    assert.equal(refusedNewcomer?.topic, LOCK_SET);
    const said = ctx.home.logs.find(/^zigbee2mqtt: skipped "Front door lock\/1": .*ends in \/<digits>/);
    assert.equal(said.length, 1, 'the refused name is said, with the reason');
  });
});

describe('security: a forged newcomer named `Hall switch/2` commands nothing', () => {
  const { ctx, start, stop } = forgedHome((hearth) =>
    hearth.policy.add({ subject: 'role:family', targetType: 'kind', target: 'light', action: 'actuate', effect: 'allow', note: 'test: family lights' }),
  );
  before(async () => {
    await start(LIST);
    await waitFor('the Hall switch', () => ctx.home.hearth.bridge.registry.entities().some((e) => e.deviceId === 'hall_switch'));
  });
  after(stop);

  it('gets no tool on `zigbee2mqtt/Hall switch/2/set`', async () => {
    // The forged list also brings a newcomer rightly named: once it is in, the list has been read.
    const marker = await z2mEntry('LED1545G12', '0x00deadbeef0000b1', 'Spare bulb');
    const forged = [...LIST, await z2mEntry('LED1545G12', '0x00deadbeef0000a2', 'Hall switch/2'), marker];
    await ctx.forger.publishAsync('zigbee2mqtt/bridge/devices', json(forged), { qos: 1, retain: true });
    const registry = ctx.home.hearth.bridge.registry;
    await waitFor('the forged list read', () => registry.entities().some((e) => e.commandTopic === 'zigbee2mqtt/Spare bulb/set'));
    const taker = registry.entities().find((e) => e.commandTopic === 'zigbee2mqtt/Hall switch/2/set');
    assert.equal(taker, undefined, `${taker?.id} commands the Hall switch's endpoint 2`);
  });
});

describe('security: a forged newcomer named `Hall switch/left`, and a forged group `Hall switch/right`, command nothing', () => {
  const { ctx, start, stop } = forgedHome((hearth) =>
    hearth.policy.add({ subject: 'role:family', targetType: 'kind', target: 'light', action: 'actuate', effect: 'allow', note: 'test: family lights' }),
  );
  const registry = () => ctx.home.hearth.bridge.registry;
  const commanded = () => new Set(registry().entities().flatMap(commandTopicsOf));
  before(async () => {
    await start(LIST);
    await waitFor('the Hall switch', () => ctx.home.actuatorToolOf('hall_switch.switch_left'));
  });
  after(stop);

  it("the names are refused and said with the reason; the Hall switch's rockers stay the Hall switch's", async () => {
    // A bulb named after the left rocker: a light, which the family may switch, on the rocker's topic.
    const marker = await z2mEntry('LED1545G12', '0x00deadbeef0000c1', 'Spare bulb');
    const forged = [...LIST, await z2mEntry('LED1545G12', '0x00deadbeef0000c2', 'Hall switch/left'), marker];
    await ctx.forger.publishAsync('zigbee2mqtt/bridge/devices', json(forged), { qos: 1, retain: true });
    await waitFor('the forged list read', () =>
      registry()
        .entities()
        .some((e) => e.commandTopic === 'zigbee2mqtt/Spare bulb/set'),
    );
    assert.ok(!commanded().has('zigbee2mqtt/Hall switch/left/set'), "a tool commands the Hall switch's left rocker");
    const said = ctx.home.logs.find(/^zigbee2mqtt: skipped "Hall switch\/left": .*ends in \/left, an endpoint of "Hall switch"/);
    assert.equal(said.length, 1, 'the refused name is said, with the reason');
    // The rocker is the Hall switch's, commanded on its own topic, with its tool.
    assert.equal(ctx.home.entity('hall_switch.switch_left')?.commandTopic, 'zigbee2mqtt/Hall switch/set');
    assert.ok(ctx.home.actuatorToolOf('hall_switch.switch_left'));

    // A group named after the right rocker, beside a group rightly named: once the other's scene is in, the list is read.
    await ctx.forger.publishAsync(
      'zigbee2mqtt/bridge/groups',
      json([
        { id: 9, friendly_name: 'Hall switch/right', members: [], scenes: [{ id: 1, name: 'Night' }] },
        { id: 10, friendly_name: 'Hallway lights', members: [], scenes: [{ id: 1, name: 'Evening' }] },
      ]),
      { qos: 1, retain: true },
    );
    await waitFor('the groups read', () => commanded().has('zigbee2mqtt/Hallway lights/set'));
    assert.ok(!commanded().has('zigbee2mqtt/Hall switch/right/set'), "a scene commands the Hall switch's right rocker");
    const warned = ctx.home.logs.lines.filter((l) => l.group === 'Hall switch/right');
    assert.deepEqual(
      warned.map((l) => [l.level, l.groupId]),
      [[40, 9]],
      'one warning',
    );
    assert.match(
      warned[0]!.msg,
      /^zigbee2mqtt: left out group "Hall switch\/right" \(id 9\) and its scenes: it ends in \/right, an endpoint of "Hall switch": /,
    );
  });
});
