// An owner that is away keeps its command topic. The front door lock (Zigbee2MQTT) is missing from a bridge/devices
// list (a bridge restarted with a partial list, or a forged one) that lists a newcomer of the same name, and a
// forged discovery config claims its `set` topic too: both are refused (logged with the topic, the owner and the
// claimant), have no tool, and an owner can see why (GET /api/devices/refused, `hearth devices`); so after a restart
// of Hearth. The lock coming back takes its topic back. A lock really removed (replaced by a new one of the same
// name) lets the new one have the topic once a person forgets the old one (DELETE /api/home/devices/:id, owners
// only). Real broker (aedes), real SQLite file, Zigbee2MQTT's own fixture list, a real HTTP server.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { devicesText } from '../../src/cli/devices.js';
import { devices } from '../../src/daemon/methods/devices.js';
import { refusedClaimsJson } from '../../src/present/refused-claim.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { request } from '../helpers/http-client.js';
import { servedHearth } from '../helpers/http-home.js';
import { waitFor } from '../helpers/wait.js';
import { z2mEntry } from '../helpers/zigbee2mqtt.js';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'z2m');
const LIST: Array<{ friendly_name: string; ieee_address: string }> = JSON.parse(readFileSync(join(FIXTURES, 'bridge-devices.json'), 'utf8'));
const LOCK_SET = 'zigbee2mqtt/Front door lock/set';
const LOCK = 'front_door_lock.lock';
const FORGED_CONFIG = 'homeassistant/light/forged_porch/config';
const FAMILY = { id: 'chat:alice', roles: ['family'] };

describe('security: an owner that is away keeps its command topic', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-away-owner-'));
  let broker: TestBroker;
  let device: MqttClient;
  /** Everything published on the lock's command topic. */
  const onLockTopic: string[] = [];
  const home = servedHearth(
    () => broker.url,
    dir,
    (hearth) =>
      hearth.policy.add({
        subject: 'role:family',
        targetType: 'kind',
        target: 'light',
        action: 'actuate',
        effect: 'allow',
        note: 'test: family switches lights',
      }),
  );
  const { open, close, entity } = home;
  const h = () => home.hearth;

  const publish = (topic: string, payload: unknown) =>
    device.publishAsync(topic, typeof payload === 'string' ? payload : JSON.stringify(payload), { qos: 1, retain: true });
  /** The list without the lock, plus these entries. */
  const listWithout = (...more: unknown[]) => [...LIST.filter((d) => d.friendly_name !== 'Front door lock'), ...more];
  /** Refused claims on the lock's topic, held by the lock's device (its entities share the `set` topic) while it is away. */
  const heldAway = () =>
    h()
      .bridge.registry.refusedClaims()
      .filter((r) => r.topic === LOCK_SET && r.awayOwner?.startsWith('front_door_lock.'));

  before(async () => {
    broker = await startAedes();
    device = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    const watcher = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    watcher.on('message', (_t, payload) => onLockTopic.push(payload.toString()));
    await watcher.subscribeAsync(LOCK_SET, { qos: 1 });
    after(() => watcher.endAsync(true));
    await publish('zigbee2mqtt/bridge/info', readFileSync(join(FIXTURES, 'bridge-info.json'), 'utf8'));
    await publish('zigbee2mqtt/bridge/devices', LIST);
    await open();
    await waitFor('the lock', () => entity(LOCK)?.commandTopic === LOCK_SET);
  });
  after(async () => {
    await close();
    await device?.endAsync(true);
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a newcomer named like the absent lock, and a forged config on its topic, are refused, logged and said why', async () => {
    // Zigbee2MQTT's list comes back without the lock, and with a "light" of the lock's name (a forged entry).
    await publish('zigbee2mqtt/bridge/devices', listWithout(await z2mEntry('LED1545G12', '0x00deadbeef000001', 'Front door lock')));
    await publish(FORGED_CONFIG, {
      name: 'Porch light',
      unique_id: 'forged_porch',
      command_topic: LOCK_SET,
      schema: 'json',
      state_topic: 'porch/forged/state',
    });
    await waitFor(
      'both claimants refused',
      () => entity(LOCK) === undefined && heldAway().some((r) => r.refused.name === 'Porch light') && heldAway().some((r) => r.refused.kind === 'light'),
    );
    const refused = heldAway().map((r) => r.refused);
    assert.ok(
      refused.some((e) => e.kind === 'light' && e.deviceId === 'front_door_lock_2'),
      refused.map((e) => e.id).join(', '),
    );
    assert.ok(refused.some((e) => e.name === 'Porch light'));
    // No tool for either; a family member allowed lights has nothing to call, and nothing reaches the lock.
    for (const e of refused) {
      const tool = home.actuatorToolOf(e.id);
      if (tool) await h().tools.call(tool.name, { action: 'turn_on' }, FAMILY);
      assert.equal(tool, undefined, `${e.id} has no tool`);
    }
    assert.deepEqual(onLockTopic, []);
    // One log line each, naming the topic, the owner (away) and the claimant.
    for (const e of refused) {
      const lines = home.logs.lines.filter((l) => l.topic === LOCK_SET && l.refused === e.id);
      assert.equal(lines.length, 1, JSON.stringify(lines));
      assert.match(String(lines[0].owner), /^front_door_lock\./);
      assert.equal(lines[0].away, true);
      assert.match(lines[0].msg, /held by front_door_lock \(front_door_lock\.\w+\), which is away .* `hearth devices forget front_door_lock`/);
    }
    // An owner sees why (the page's API, `hearth devices`); a guest may not.
    const seen = await request(`${home.url}/api/devices/refused`, { token: home.owner });
    assert.equal(seen.status, 200, seen.text);
    const porch = (seen.json as Array<Record<string, unknown>>).find((r) => r.name === 'Porch light');
    assert.deepEqual(
      { topic: porch?.topic, ownerAway: porch?.ownerAway, ownerDevice: porch?.ownerDevice },
      { topic: LOCK_SET, ownerAway: true, ownerDevice: 'front_door_lock' },
    );
    assert.equal((await request(`${home.url}/api/devices/refused`, { token: home.guest })).status, 403);
    assert.equal((await request(`${home.url}/api/devices/refused`)).status, 401);
    // `hearth devices`: the claimants under the one away device to forget, each with the topic it claimed.
    const text = devicesText(devices(h().bridge), undefined, refusedClaimsJson(h().bridge));
    assert.equal(text.match(/hearth devices forget front_door_lock/g)?.length, 1, text);
    assert.match(
      text,
      /\n {2}front_door_lock is away \(remembered, not in the home now\) and holds the command topics these \d+ entities claim; if it is really gone, `hearth devices forget front_door_lock` frees them:\n(?: {4}.*\n)*? {4}Porch light \(porch_light\.porch_light\): its command topic zigbee2mqtt\/Front door lock\/set is held by front_door_lock\.\w+\n/,
    );
  });

  it('after a restart the lock, still away, still holds its topic; back in the list, it takes it again', async () => {
    await close();
    await open();
    await waitFor(
      'the claimants refused after the restart',
      () => heldAway().some((r) => r.refused.name === 'Porch light') && heldAway().some((r) => r.refused.kind === 'light'),
    );
    assert.equal(entity(LOCK), undefined);
    assert.equal(entity('front_door_lock_2.light'), undefined);
    // The lock is listed again: its topic is its own, under the same id (its rules, approvals and audit name it).
    await publish('zigbee2mqtt/bridge/devices', LIST);
    await waitFor('the lock back', () => entity(LOCK)?.commandTopic === LOCK_SET);
    assert.equal(entity('porch_light.porch_light'), undefined, 'the forged config is still refused');
    assert.deepEqual(onLockTopic, []);
    // The forged config is cleared (as a person would, at its source).
    await publish(FORGED_CONFIG, '');
    await waitFor(
      'the forged config gone',
      () =>
        !h()
          .bridge.registry.refusedClaims()
          .some((r) => r.refused.name === 'Porch light'),
    );
  });

  it('a lock really removed: its replacement of the same name gets the topic once an owner forgets the old one', async () => {
    // The lock is replaced: Zigbee2MQTT lists a new lock (another IEEE address) under the old name.
    await publish('zigbee2mqtt/bridge/devices', listWithout(await z2mEntry('YRD426NRSC', '0x000b57fffe000042', 'Front door lock')));
    const claim = await waitFor('the new lock refused', () => heldAway().find((r) => r.refused.kind === 'lock'));
    const forget = (id: string, token: string | null) => request(`${home.url}/api/home/devices/${encodeURIComponent(id)}`, { method: 'DELETE', token });
    // Only an owner forgets; a device Hearth never knew is not found; a device in the home now is not forgotten.
    assert.equal((await forget('front_door_lock', home.guest)).status, 403);
    assert.equal((await forget('front_door_lock', null)).status, 401);
    assert.equal((await forget('no_such_device', home.owner)).status, 404);
    const present = await forget('living_room_light', home.owner);
    assert.equal(present.status, 409, present.text);
    assert.match(present.json.error.message, /is in the home now/);
    assert.equal(heldAway().length > 0, true, 'nothing forgotten by the refused requests');
    const done = await forget('front_door_lock', home.owner);
    assert.equal(done.status, 200, done.text);
    assert.ok(done.json.forgotten.includes(LOCK), done.text);
    const fresh = await waitFor('the new lock on the topic', () => entity(claim.refused.id));
    assert.equal(fresh.commandTopic, LOCK_SET);
    assert.equal(home.actuatorToolOf(fresh.id)?.capability, 'actuator');
    assert.deepEqual(heldAway(), []);
  });
});
