// The first command after an owner confirms a move is echoed. While a move waits, the moved lock is left out of the
// home, so its state topic is unsubscribed; the confirmation subscribes it again. Before, the first call published
// at once: on a broker that had not yet set the subscription up (aedes handles a SUBSCRIBE and a PUBLISH read
// together at once; a cluster sets a subscription up on every node), the lock's answer was lost and an owner's
// first "lock" after confirming read "unconfirmed" although the lock had moved and locked. Now the call waits,
// bounded, for the broker's SUBACK of the entity's fresh state subscription before it publishes. The broker here
// (aedes, in-process) is slow to set up Hearth's new subscription of the lock's state topic: it holds it until the
// call has begun (its audit row is written), as a slow broker would. Real SQLite file, Home Assistant discovery.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import type { Hearth } from '../../src/hearth.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { actuatorTool, OWNER, openHearth } from '../helpers/home.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';

const CONFIG = 'homeassistant/lock/front_door/config';
const STATE = 't/front_door/state';
const lockConfig = (commandTopic: string) => ({ name: 'Front door', unique_id: 'front_door_lock_1', command_topic: commandTopic, state_topic: STATE });

describe('security: the first command after a confirmed move is echoed', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-confirmed-move-'));
  let broker: TestBroker;
  let hearth: Hearth;
  let lock: MqttClient;
  /** What happened, in order: the broker acknowledging Hearth's state subscription, the lock hearing a command. */
  const order: string[] = [];
  let armed = false;
  let holding = false;
  const held: Array<() => void> = [];
  const release = () => {
    holding = false;
    for (const pass of held.splice(0)) pass();
  };

  before(async () => {
    broker = await startAedes();
    // A slow broker: once armed, Hearth's subscription of the lock's state topic is recorded, and set up only when
    // released (one that comes after the release goes through at once).
    broker.aedes!.authorizeSubscribe = (client, sub, done) => {
      if (!armed || sub.topic !== STATE || !client?.id.startsWith('hearth-')) return done(null, sub);
      const pass = () => {
        order.push('subscribed');
        done(null, sub);
      };
      if (holding) held.push(pass);
      else pass();
    };
    hearth = await openHearth(broker.url, dir, logSink('debug').log, { 'mqtt.protocolVersion': '4', 'discovery.homie.enabled': false });
    // The lock: it takes commands on whatever topic it is told and reports at once (not retained, as locks do).
    lock = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    lock.on('message', (topic, payload) => {
      if (!topic.endsWith('/set')) return;
      order.push(`command ${topic} ${payload}`);
      void lock.publishAsync(STATE, payload.toString() === 'UNLOCK' ? 'UNLOCKED' : 'LOCKED', { qos: 1 });
    });
    await lock.subscribeAsync('t/#', { qos: 1 });
    await lock.publishAsync(CONFIG, JSON.stringify(lockConfig('t/front_door/set')), { qos: 1, retain: true });
    await waitFor('the lock', () => hearth.bridge.registry.entities().find((e) => e.name === 'Front door'));
  });
  after(async () => {
    release();
    await lock?.endAsync(true);
    await hearth?.close();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("an owner confirms the lock's move and locks it at once: confirmed, the command sent after the broker had the subscription", async () => {
    const registry = hearth.bridge.registry;
    const { id, deviceId: device } = registry.entities().find((e) => e.name === 'Front door')!;
    await lock.publishAsync(CONFIG, JSON.stringify(lockConfig('t/porch/set')), { qos: 1, retain: true });
    await waitFor('the move waiting', () => registry.refusedClaims().some((r) => r.movedFrom && r.topic === 't/porch/set'));
    assert.ok(!hearth.bridge.connection.subscriptions.has(STATE), 'left out while it waits: its state topic is not read');
    armed = holding = true;
    // Confirmed, and called at once: no wait for anything in between.
    assert.equal(registry.confirmMove(device, 't/porch/set').moved.length, 1);
    const call = hearth.tools.call(actuatorTool(hearth, id).name, { action: 'lock' }, OWNER);
    // The slow broker sets the subscription up once the call has begun (its row is written before anything is sent).
    await waitFor('the call begun', () => hearth.audit.tail(1)[0]?.outcome === 'pending' && hearth.audit.tail(1)[0]?.entityId === id);
    release();
    const result = await call;
    assert.equal(result.isError, undefined, result.text);
    assert.match(result.text!, /^confirmed: /);
    assert.equal(hearth.audit.tail(1)[0]!.outcome, 'confirmed');
    assert.deepEqual(order, ['subscribed', 'command t/porch/set LOCK']);
  });
});
