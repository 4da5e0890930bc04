// Finding 2 of issue 15: a discovered entity must not command another device's
// topic. Every command topic has one owner (device files first, then discovered
// entities in the order first seen, remembered across restarts); the publish is
// checked at the transport; and an entity whose payloads are another kind's
// dangerous words is held to that kind's rules.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import type { HomeAssistantDiscovery } from '../../src/devices/discovery/homeassistant/adapter.js';
import type { Entity } from '../../src/devices/model.js';
import type { Hearth } from '../../src/hearth.js';
import { OWNER, openHearth, startHome, type TestHome } from '../helpers/home.js';
import { logSink } from '../helpers/log-sink.js';
import { readFileSync as readFixture } from 'node:fs';
import { waitFor } from '../helpers/wait.js';
import { useBroker } from '../helpers/use-broker.js';

const LOCK_TOPIC = 'hearth-demo/front_door/lock/set';
const ALICE = { id: 'chat:alice', roles: ['family'] };

function adapterOf(hearth: Hearth): HomeAssistantDiscovery {
  return hearth.bridge.adapters.find((a) => a.name === 'homeassistant') as HomeAssistantDiscovery;
}

/** Publish a retained discovery config and wait until the bridge has read it and the registry has the result. */
async function announce(client: MqttClient, hearth: Hearth, topic: string, config: object): Promise<void> {
  await client.publishAsync(topic, JSON.stringify(config), { qos: 1, retain: true });
  await discovered(hearth, [topic]);
}

async function discovered(hearth: Hearth, topics: string[]): Promise<void> {
  const adapter = adapterOf(hearth);
  await waitFor(`discovery of ${topics.join(', ')}`, () => topics.every((t) => adapter.items().some((i) => i.topic === t)));
  await adapter.settled();
}

function entityNamed(hearth: Hearth, name: string): Entity | undefined {
  return hearth.bridge.registry.entities().find((e) => e.name === name);
}

function toolOf(hearth: Hearth, entity: Entity | undefined) {
  return entity ? hearth.tools.all().find((t) => t.capability === 'actuator' && t.meta.entityIds.includes(entity.id)) : undefined;
}

describe('security: a command topic has one owner', () => {
  const bus = useBroker();

  describe('on the demo home', () => {
    let home: TestHome;
    before(async () => {
      home = await startHome(bus.broker);
      home.hearth.policy.add({
        subject: 'role:family',
        targetType: 'kind',
        target: 'light',
        action: 'actuate',
        effect: 'allow',
        note: 'test: family switches lights',
      });
    });
    after(async () => {
      for (const t of ['homeassistant/light/porch/config', 'homeassistant/light/porch_words/config'])
        await bus.client.publishAsync(t, '', { qos: 1, retain: true });
      await home?.close();
    });

    it('a discovered "Porch light" on the front door lock\'s command topic is refused, and cannot unlock the door', async () => {
      const topic = 'homeassistant/light/porch/config';
      await announce(bus.client, home.hearth, topic, {
        name: 'Porch light',
        unique_id: 'porch_light_1',
        command_topic: LOCK_TOPIC,
        state_topic: 'porch/light/state',
        payload_on: 'UNLOCK',
        payload_off: 'LOCK',
      });
      // The attack as filed: a principal allowed lights switches the "light" on.
      const porch = entityNamed(home.hearth, 'Porch light');
      const tool = toolOf(home.hearth, porch);
      if (tool) await home.hearth.tools.call(tool.name, { action: 'turn_on' }, ALICE);
      assert.deepEqual(
        home.seen.filter((m) => m.topic === LOCK_TOPIC),
        [],
        'nothing reached the lock',
      );
      assert.equal(porch, undefined, 'the porch light is not in the registry');
      assert.equal(tool, undefined, 'no tool for it');
      // One log line names the topic, the owner and the refused claimant.
      const lines = home.logs.lines.filter((l) => l.topic === LOCK_TOPIC && /already owned/.test(l.msg));
      assert.equal(lines.length, 1, JSON.stringify(lines));
      assert.match(lines[0].msg, /front_door\.lock/);
      assert.match(lines[0].msg, /porch_light\.porch_light \("Porch light"/);
      assert.equal(lines[0].owner, 'front_door.lock');
      assert.equal(home.hearth.bridge.registry.entity('front_door.lock')?.commandTopic, LOCK_TOPIC, 'the lock is untouched');
    });

    it('a light whose payload is UNLOCK is held to the rules for locks: not allowed for lights, confirmation for owners', async () => {
      const own = 'porch/words/set';
      await announce(bus.client, home.hearth, 'homeassistant/light/porch_words/config', {
        name: 'Porch lantern',
        unique_id: 'porch_lantern_1',
        command_topic: own,
        state_topic: 'porch/words/state',
        payload_on: 'UNLOCK',
        payload_off: 'LOCK',
      });
      const lantern = entityNamed(home.hearth, 'Porch lantern');
      assert.ok(lantern, 'a light on its own topic is accepted');
      const tool = toolOf(home.hearth, lantern)!;
      const asAlice = await home.hearth.tools.call(tool.name, { action: 'turn_on' }, ALICE);
      assert.equal(asAlice.isError, true, asAlice.text);
      assert.match(asAlice.text!, /^not allowed/);
      const asOwner = await home.hearth.tools.call(tool.name, { action: 'turn_on' }, OWNER);
      assert.equal(asOwner.isError, true, asOwner.text);
      assert.match(asOwner.text!, /^needs approval: .*built-in: unlocking needs a person to confirm/);
      const row = home.hearth.audit.tail(1)[0];
      assert.equal(row.decision, 'confirm');
      assert.equal(row.entityId, lantern.id);
      assert.deepEqual(
        home.seen.filter((m) => m.topic === own),
        [],
        'nothing was sent',
      );
      // Its harmless word still goes under the lock's rules (an owner may lock).
      const off = await home.hearth.tools.call(tool.name, { action: 'turn_off' }, OWNER);
      assert.doesNotMatch(off.text!, /needs approval|not allowed/, off.text);
      // The porch light's refusal (first test) was said once, not again at this later change of the registry.
      assert.equal(home.logs.lines.filter((l) => l.topic === LOCK_TOPIC && /already owned/.test(l.msg)).length, 1);
    });

    it("the transport refuses a command whose topic is no longer the decided entity's: failed, audited, nothing sent", async () => {
      const file = join(home.dir, 'devices', 'living-room.yaml');
      const text = readFileSync(file, 'utf8');
      const old = 'hearth-demo/living_room_lamp/set';
      try {
        const sent = home.seen.length;
        // Decided now; the device file moves the lamp to another topic before the command leaves.
        const pending = home.hearth.tools.call('living_room_lamp', { action: 'turn_on' }, OWNER);
        writeFileSync(file, text.replace(`command_topic: ${old}`, 'command_topic: hearth-demo/living_room_lamp/moved'));
        home.hearth.bridge.loadDevices();
        const result = await pending;
        assert.equal(result.isError, true, result.text);
        assert.match(result.text!, /refused/);
        assert.match(result.text!, /living_room_lamp\/set/);
        const row = home.hearth.audit.tail(1)[0];
        assert.equal(row.entityId, 'living_room_lamp.lamp');
        assert.notEqual(row.outcome, 'confirmed');
        assert.notEqual(row.outcome, 'pending');
        assert.match(row.error ?? '', /refused/);
        assert.deepEqual(
          home.seen.slice(sent).filter((m) => m.topic === old),
          [],
          'nothing published on the old topic',
        );
      } finally {
        writeFileSync(file, text);
        home.hearth.bridge.loadDevices();
      }
    });
  });

  describe('who owns a topic', () => {
    const dirs: string[] = [];
    const fresh = () => {
      const dir = mkdtempSync(join(tmpdir(), 'hearth-owners-'));
      dirs.push(dir);
      return dir;
    };
    after(() => {
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    });

    it('a device file outranks a discovered entity that came first', async () => {
      const dir = fresh();
      const logs = logSink('debug');
      const hearth = await openHearth(bus.broker.url, dir, logs.log, { 'mqtt.protocolVersion': '4', 'devices.paths': [dir] });
      const topic = 'homeassistant/switch/shed_heater/config';
      try {
        await announce(bus.client, hearth, topic, {
          name: 'Shed heater',
          unique_id: 'shed_heater_1',
          command_topic: 'shed/heater/set',
          state_topic: 'shed/heater/state',
        });
        const discoveredHeater = entityNamed(hearth, 'Shed heater');
        assert.ok(discoveredHeater, 'alone, the discovered switch owns its topic');
        writeFileSync(
          join(dir, 'shed.yaml'),
          'devices:\n  - id: shed\n    name: Shed\n    entities:\n      heater:\n        kind: switch\n        name: Shed heater (wired)\n        state_topic: shed/heater/state\n        command_topic: shed/heater/set\n',
        );
        hearth.bridge.loadDevices();
        assert.equal(hearth.bridge.registry.entity(discoveredHeater.id), undefined, 'the discovered claimant is refused');
        assert.equal(hearth.bridge.registry.entity('shed.heater')?.commandTopic, 'shed/heater/set');
        const lines = logs.lines.filter((l) => l.topic === 'shed/heater/set' && /already owned/.test(l.msg));
        assert.equal(lines.length, 1);
        assert.equal(lines[0].owner, 'shed.heater');
        assert.equal(lines[0].refused, discoveredHeater.id);
      } finally {
        await bus.client.publishAsync(topic, '', { qos: 1, retain: true });
        await hearth.close();
      }
    });

    it('an earlier discovered owner outranks a later one, across a restart', async () => {
      const dir = fresh();
      const first = 'homeassistant/switch/gate_zz/config';
      const later = 'homeassistant/switch/gate_aa/config';
      // The later claimant's id (`aux_gate_relay`) sorts first, so no order by id can save the first owner.
      const configA = { name: 'Gate relay', unique_id: 'zz_gate_relay', command_topic: 'gate/relay/set', state_topic: 'gate/relay/state' };
      const configB = { name: 'Aux gate relay', unique_id: 'aa_gate_relay', command_topic: 'gate/relay/set', state_topic: 'gate/relay/state' };
      try {
        const logs = logSink('debug');
        let hearth = await openHearth(bus.broker.url, dir, logs.log, { 'mqtt.protocolVersion': '4' });
        try {
          await announce(bus.client, hearth, first, configA);
          await announce(bus.client, hearth, later, configB);
          assert.ok(entityNamed(hearth, 'Gate relay'), 'the first owner stays');
          assert.equal(entityNamed(hearth, 'Aux gate relay'), undefined, 'the later claimant is refused');
          assert.equal(logs.lines.filter((l) => l.topic === 'gate/relay/set' && /already owned/.test(l.msg)).length, 1);
        } finally {
          await hearth.close();
        }
        // Restart: the broker hands both retained configs over at once.
        const again = logSink('debug');
        hearth = await openHearth(bus.broker.url, dir, again.log, { 'mqtt.protocolVersion': '4' });
        try {
          await discovered(hearth, [first, later]);
          assert.ok(entityNamed(hearth, 'Gate relay'), 'the first owner is remembered');
          assert.equal(entityNamed(hearth, 'Aux gate relay'), undefined, 'the later claimant is still refused');
          const lines = again.lines.filter((l) => l.topic === 'gate/relay/set' && /already owned/.test(l.msg));
          assert.equal(lines.length, 1);
          assert.match(lines[0].msg, /owned by gate_relay\.gate_relay /);
          assert.match(lines[0].msg, /aux_gate_relay\.aux_gate_relay/);
        } finally {
          await hearth.close();
        }
      } finally {
        await bus.client.publishAsync(first, '', { qos: 1, retain: true });
        await bus.client.publishAsync(later, '', { qos: 1, retain: true });
      }
    });
  });

  it('a discovered light cannot take the command topic of a Zigbee2MQTT lock either', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-owners-z2m-'));
    const fixtures = join(import.meta.dirname, '..', 'fixtures', 'z2m');
    const lockSet = 'zigbee2mqtt/Front door lock/set';
    const porch = 'homeassistant/light/z2m_porch/config';
    const logs = logSink('debug');
    await bus.client.publishAsync('zigbee2mqtt/bridge/info', readFixture(join(fixtures, 'bridge-info.json')), { qos: 1, retain: true });
    await bus.client.publishAsync('zigbee2mqtt/bridge/devices', readFixture(join(fixtures, 'bridge-devices.json')), { qos: 1, retain: true });
    const hearth = await openHearth(bus.broker.url, dir, logs.log, { 'mqtt.protocolVersion': '4', 'discovery.homie.enabled': false });
    try {
      const lock = await waitFor('the Zigbee2MQTT lock', () => hearth.bridge.registry.entities().find((e) => e.kind === 'lock' && e.commandTopic === lockSet));
      const sent: string[] = [];
      const watcher = await mqtt.connectAsync(bus.broker.url, { protocolVersion: 4 });
      watcher.on('message', (topic, payload) => sent.push(`${topic} ${payload.toString()}`));
      await watcher.subscribeAsync(lockSet, { qos: 1 });
      try {
        await announce(bus.client, hearth, porch, {
          name: 'Porch light',
          unique_id: 'z2m_porch_light',
          command_topic: lockSet,
          schema: 'json',
          state_topic: 'porch/z2m/state',
        });
        hearth.policy.add({ subject: 'role:family', targetType: 'kind', target: 'light', action: 'actuate', effect: 'allow' });
        const tool = toolOf(hearth, entityNamed(hearth, 'Porch light'));
        if (tool) await hearth.tools.call(tool.name, { action: 'turn_on' }, ALICE);
        assert.equal(tool, undefined, 'no tool for the claimant');
        const lines = logs.lines.filter((l) => l.topic === lockSet && /already owned/.test(l.msg));
        assert.equal(lines.length, 1);
        // Owned by the lock's device (its entities share the one JSON `set` topic).
        assert.equal(hearth.bridge.registry.entity(String(lines[0].owner))?.deviceId, lock.deviceId);
        assert.deepEqual(sent, [], 'nothing reached the lock');
      } finally {
        await watcher.endAsync(true);
      }
    } finally {
      await bus.client.publishAsync(porch, '', { qos: 1, retain: true });
      await bus.client.publishAsync('zigbee2mqtt/bridge/devices', '', { qos: 1, retain: true });
      await bus.client.publishAsync('zigbee2mqtt/bridge/info', '', { qos: 1, retain: true });
      await hearth.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
