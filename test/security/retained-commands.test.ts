// Issue 40: a retained UNLOCK published on a topic before a lock with that command topic was discovered stayed on
// the broker and reached the lock whenever it subscribed, with no decision and no row. When an entity is admitted,
// a retained message on its command topic is cleared and logged (naming the topic and the entity), and Hearth's
// own commands are never retained. On the embedded broker (aedes, through the assembly) and on mosquitto, where
// retained messages also outlive a restart.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { MqttClient } from 'mqtt';
import { commandTopicsOf } from '../../src/devices/commands.js';
import { loadConfig } from '../../src/config/load.js';
import { Hearth } from '../../src/hearth.js';
import { publishKept, tryConnect } from '../helpers/broker-clients.js';
import { startMosquitto, type TestBroker } from '../helpers/brokers.js';
import { actuatorTool, OWNER, openHearth } from '../helpers/home.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';

const GATE_SET = 'garden/gate/set';
const GATE_STATE = 'garden/gate/state';
const GATE_CONFIG = {
  name: 'Garden gate',
  unique_id: 'garden_gate_lock_01',
  command_topic: GATE_SET,
  state_topic: GATE_STATE,
  device: { identifiers: ['garden_gate_01'], name: 'Garden gate', manufacturer: 'Nuki' },
};

/** A client that must be let in (anonymous, on loopback). */
async function client(url: string, clients: MqttClient[]): Promise<MqttClient> {
  const { client: c, refused } = await tryConnect(url);
  assert.ok(c, refused);
  clients.push(c);
  return c;
}

/**
 * The attack, then the lock coming up: a retained UNLOCK is planted on a topic no entity has yet, the lock is
 * announced, and only then subscribes to its command topic. It must hear Hearth's LOCK, and never the UNLOCK.
 */
async function plantedUnlock(hearth: Hearth, url: string, logs: ReturnType<typeof logSink>, clients: MqttClient[]): Promise<string[]> {
  // Sees every message on the command topic as it passes (the clearing too).
  const observer = await client(url, clients);
  const passing: string[] = [];
  observer.on('message', (topic, payload) => topic === GATE_SET && passing.push(payload.toString()));
  await observer.subscribeAsync(GATE_SET, { qos: 1 });

  const attacker = await client(url, clients);
  assert.equal(await publishKept(attacker, GATE_SET, 'UNLOCK', { retain: true }), true, 'no entity has the topic yet: the broker takes it');
  await waitFor('the planted message to pass', () => passing.includes('UNLOCK'));

  const lock = await client(url, clients);
  await lock.publishAsync('homeassistant/lock/garden_gate/config', JSON.stringify(GATE_CONFIG), { qos: 1 });
  await lock.publishAsync(GATE_STATE, 'LOCKED', { qos: 1 });
  const entity = await waitFor('Hearth to admit the lock', () =>
    hearth.bridge.registry.entities().find((e) => e.kind === 'lock' && commandTopicsOf(e).includes(GATE_SET)),
  );
  const cleared = await waitFor('the clearing to be logged', () => logs.find(/retained message was waiting on garden\/gate\/set/)[0]);
  assert.equal(cleared.topic, GATE_SET);
  assert.equal(cleared.entity, entity.id, 'the line names the entity');
  // The empty retained message that deletes it has passed the broker.
  await waitFor('the clearing to pass', () => passing.includes(''));

  // The lock subscribes now: a retained message would come at once, before anything published later.
  const heard: string[] = [];
  lock.on('message', (topic, payload) => {
    if (topic !== GATE_SET) return;
    heard.push(payload.toString());
    if (payload.toString() === 'LOCK') lock.publish(GATE_STATE, 'LOCKED');
  });
  await lock.subscribeAsync(GATE_SET, { qos: 1 });
  const r = await hearth.tools.call(actuatorTool(hearth, entity.id).name, { action: 'lock' }, OWNER);
  assert.match(r.text ?? '', /^confirmed/, JSON.stringify(r));
  await waitFor("the lock to hear Hearth's command", () => heard.includes('LOCK'));
  return heard;
}

describe('security: a retained command planted before discovery is cleared when the entity is admitted', () => {
  const dirs: string[] = [];
  const clients: MqttClient[] = [];
  let mosquitto: TestBroker | undefined;
  let hearth: Hearth | undefined;
  after(async () => {
    for (const c of clients) c.end(true);
    await hearth?.close();
    await mosquitto?.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('on the embedded broker', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-retained-embedded-'));
    dirs.push(dir);
    const logs = logSink('info');
    const { config } = loadConfig({
      cwd: dir,
      env: {},
      flags: { 'mqtt.embedded.port': '0', 'database.path': join(dir, 'hearth.db'), 'devices.paths': [], demo: false, 'tools.shape': 'per-entity' } as never,
    });
    hearth = await Hearth.open({ config, log: logs.log, embedBroker: true, connectWaitMs: 5000 });
    hearth.policy.add({ subject: 'role:owner', targetType: 'any', target: '*', action: 'actuate', effect: 'allow', note: 'test: owners act' });
    assert.ok(hearth.bridge.broker, 'the embedded broker runs');
    const heard = await plantedUnlock(hearth, hearth.bridge.broker.url, logs, clients);
    assert.deepEqual(heard, ['LOCK'], 'the lock heard only the command Hearth decided');
    await hearth.close();
    hearth = undefined;
  });

  it('on mosquitto, where nothing Hearth sends stays retained', async () => {
    mosquitto = await startMosquitto();
    const dir = mkdtempSync(join(tmpdir(), 'hearth-retained-mosquitto-'));
    dirs.push(dir);
    const logs = logSink('info');
    hearth = await openHearth(mosquitto.url, dir, logs.log, { 'mqtt.protocolVersion': '5' });
    const heard = await plantedUnlock(hearth, mosquitto.url, logs, clients);
    assert.deepEqual(heard, ['LOCK'], 'the lock heard only the command Hearth decided');
    // Nothing is retained on the command topic now (not the UNLOCK, not Hearth's LOCK), across a restart too:
    // mosquitto hands a new subscriber what it keeps before a message published after the subscription.
    await mosquitto.restart();
    const fresh = await client(mosquitto.url, clients);
    const got: string[] = [];
    fresh.on('message', (topic, payload) => topic === GATE_SET && got.push(payload.toString()));
    await fresh.subscribeAsync(GATE_SET, { qos: 1 });
    await fresh.publishAsync(GATE_SET, 'after', { qos: 1 });
    await waitFor('the live message', () => got.includes('after'));
    assert.deepEqual(got, ['after']);
  });

  it('on mosquitto over MQTT 5, one planted while Hearth is connected is cleared at once, and none of its own commands come back', async () => {
    const broker = await startMosquitto();
    const dir = mkdtempSync(join(tmpdir(), 'hearth-retained-live-'));
    dirs.push(dir);
    const logs = logSink('info');
    const live = await openHearth(broker.url, dir, logs.log, { 'mqtt.protocolVersion': '5' });
    try {
      const lock = await client(broker.url, clients);
      await lock.publishAsync('homeassistant/lock/garden_gate/config', JSON.stringify(GATE_CONFIG), { qos: 1 });
      await lock.publishAsync(GATE_STATE, 'LOCKED', { qos: 1, retain: true });
      const entity = await waitFor('Hearth to admit the lock', () =>
        live.bridge.registry.entities().find((e) => e.kind === 'lock' && commandTopicsOf(e).includes(GATE_SET)),
      );
      // What reaches Hearth on the command topic: its own LOCK must not.
      const reached: string[] = [];
      live.bridge.connection.on('message', (topic, payload) => topic === GATE_SET && reached.push(payload.toString()));
      lock.on('message', (topic, payload) => topic === GATE_SET && payload.toString() === 'LOCK' && lock.publish(GATE_STATE, 'LOCKED', { retain: true }));
      await lock.subscribeAsync(GATE_SET, { qos: 1 });
      await live.bridge.connection.whenSubscribed([GATE_SET], 10_000);
      const r = await live.tools.call(actuatorTool(live, entity.id).name, { action: 'lock' }, OWNER);
      assert.match(r.text ?? '', /^confirmed/, JSON.stringify(r));

      // Planted now, while Hearth is connected: no reconnect needed to clear it.
      const attacker = await client(broker.url, clients);
      assert.equal(await publishKept(attacker, GATE_SET, 'UNLOCK', { retain: true }), true);
      const cleared = await waitFor('the clearing to be logged', () => logs.find(/retained message was waiting on garden\/gate\/set/)[0]);
      assert.equal(cleared.entity, entity.id);
      assert.equal(live.bridge.connection.lastReconnect, undefined, 'cleared without a reconnect');
      assert.deepEqual(reached, ['UNLOCK'], "only the attacker's message reached Hearth, not its own LOCK");
      // The lock powered up again (a fresh subscription) hears nothing kept: only what is published after.
      const again = await client(broker.url, clients);
      const got: string[] = [];
      again.on('message', (topic, payload) => topic === GATE_SET && got.push(payload.toString()));
      await waitFor('the clearing to pass the broker', async () => {
        got.length = 0;
        await again.subscribeAsync(GATE_SET, { qos: 1 });
        await again.publishAsync(GATE_SET, 'after', { qos: 1 });
        await waitFor('the live message', () => got.includes('after'));
        await again.unsubscribeAsync(GATE_SET);
        return !got.includes('UNLOCK');
      });
      assert.deepEqual(got, ['after']);
    } finally {
      await live.close();
      await broker.stop();
    }
  });
});
