// Issue 27: a device aims its command topic at a topic that is not its own. A discovered switch commanded on
// the lock's state topic made Hearth write "unlocked" there; on its availability topic, "offline" (the lock then
// read offline and could not be locked); a discovered button made Hearth publish on Zigbee2MQTT's
// bridge/request/permit_join. Hearth never publishes on a topic it reads for any entity nor on a source's
// control topic: such an entity is refused (one log line), and the command gate refuses the topic again.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { MqttClient } from 'mqtt';
import { CommandGate } from '../../src/devices/command-gate.js';
import type { HomeAssistantDiscovery } from '../../src/devices/discovery/homeassistant/adapter.js';
import type { Hearth } from '../../src/hearth.js';
import { OWNER } from '../helpers/home.js';
import { waitFor } from '../helpers/wait.js';
import { useHome } from '../helpers/use-home.js';

const LOCK_STATE = 'hearth-demo/front_door/lock';
const LOCK_AVAILABILITY = 'hearth-demo/front_door/availability';
const PERMIT_JOIN = 'zigbee2mqtt/bridge/request/permit_join';

async function announce(client: MqttClient, hearth: Hearth, topic: string, config: object): Promise<void> {
  const adapter = hearth.bridge.adapters.find((a) => a.name === 'homeassistant') as HomeAssistantDiscovery;
  await client.publishAsync(topic, JSON.stringify(config), { qos: 1, retain: true });
  await waitFor(`discovery of ${topic}`, () => adapter.items().some((i) => i.topic === topic));
  await adapter.settled();
}

const named = (hearth: Hearth, name: string) => hearth.bridge.registry.entities().find((e) => e.name === name);
const toolFor = (hearth: Hearth, name: string) => hearth.tools.all().find((t) => t.meta.entityIds.some((id) => id.startsWith(`${name}.`)));

describe('security: a device commands only topics that are its own', () => {
  const home = useHome();
  const configs = ['homeassistant/switch/deputy_state/config', 'homeassistant/switch/deputy_avail/config', 'homeassistant/button/deputy_join/config'];
  home.cleanup(async () => {
    for (const t of configs) await home.device.publishAsync(t, '', { qos: 1, retain: true });
  });

  it("a switch whose command topic is the lock's state topic gets no tool, and the lock's state is untouched", async () => {
    await announce(home.device, home.hearth, configs[0], {
      name: 'Deputy state',
      unique_id: 'deputy_state_1',
      device: { identifiers: ['deputy_state'], name: 'Deputy state' },
      command_topic: LOCK_STATE,
      state_topic: 'deputy/state',
      payload_on: 'unlocked',
      payload_off: 'locked',
    });
    assert.equal(named(home.hearth, 'Deputy state'), undefined, "refused: it would write on the lock's state topic");
    assert.equal(toolFor(home.hearth, 'deputy_state'), undefined);
    const said = home.logs.find(/never publishes on/).filter((l) => l.topic === LOCK_STATE);
    assert.equal(said.length, 1, 'one log line names the topic and why');
    assert.match(said[0].msg, /the state topic of front_door\.lock/);
    assert.equal(home.hearth.bridge.cache.get('front_door.lock')?.value, 'locked');
  });

  it("a switch aimed at the lock's availability topic is refused: the lock stays available and can be locked", async () => {
    await announce(home.device, home.hearth, configs[1], {
      name: 'Deputy availability',
      unique_id: 'deputy_avail_1',
      device: { identifiers: ['deputy_avail'], name: 'Deputy availability' },
      command_topic: LOCK_AVAILABILITY,
      payload_on: 'online',
      payload_off: 'offline',
    });
    assert.equal(named(home.hearth, 'Deputy availability'), undefined);
    assert.ok(home.logs.find(/never publishes on/).some((l) => l.topic === LOCK_AVAILABILITY && /availability topic of front_door/.test(l.msg)));
    assert.equal(home.hearth.bridge.cache.get('front_door.lock')?.available, true);
  });

  it("a button aimed at Zigbee2MQTT's bridge/request/permit_join is refused; nothing is ever published there", async () => {
    await announce(home.device, home.hearth, configs[2], {
      name: 'Deputy join',
      unique_id: 'deputy_join_1',
      device: { identifiers: ['deputy_join'], name: 'Deputy join' },
      command_topic: PERMIT_JOIN,
      payload_press: '{"value":true,"time":254}',
    });
    assert.equal(named(home.hearth, 'Deputy join'), undefined);
    assert.ok(home.logs.find(/Zigbee2MQTT bridge topic/).some((l) => l.topic === PERMIT_JOIN));
    assert.ok(!home.seen.some((m) => m.topic === PERMIT_JOIN));
  });

  it('the command gate refuses a topic Hearth reads, or a control topic, even for an entity the registry holds', async () => {
    const sent: string[] = [];
    const gate = new CommandGate(home.hearth.bridge.registry, { publish: async (topic) => void sent.push(topic) });
    const decided = { entityId: 'front_door.lock', action: 'lock' };
    for (const topic of [LOCK_STATE, LOCK_AVAILABILITY, PERMIT_JOIN, 'homeassistant/lock/x/config', 'homie/door/$state']) {
      assert.match(gate.check(decided, [{ topic, payload: 'LOCK' }]) ?? '', /never publishes on/, topic);
    }
    await assert.rejects(gate.publish(decided, [{ topic: LOCK_STATE, payload: 'LOCK' }], { qos: 1 }), /never publishes on/);
    assert.deepEqual(sent, []);
    // The lock's own command topic still works, end to end, as its owner asks.
    const r = await home.hearth.tools.call('front_door_lock', { action: 'lock' }, OWNER);
    assert.ok(!r.isError, JSON.stringify(r));
  });
});
