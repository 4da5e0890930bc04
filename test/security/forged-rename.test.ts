// A forged rename must not free what a real device owns. The front door lock (Zigbee2MQTT, its real model's
// exposes) owns `zigbee2mqtt/Front door lock/set`. A client allowed to publish forges what Zigbee2MQTT says after a
// rename (bridge/response/device/rename, a retained bridge/devices with the lock renamed "Porch", the lock's state on
// its new topic) and adds a newcomer lock named "Front door lock". Before the fix the lock's topics followed the
// list: Hearth sent the lock's commands to `zigbee2mqtt/Porch/set` (where the forger listens), forgot the old topic,
// and gave it (and the broker's gate on it) to the forger's newcomer. Now the lock keeps its topic, its move waits
// for an owner, the newcomer is refused, nothing is sent anywhere, and an owner sees why; so after a restart. A
// genuine rename (Zigbee2MQTT's flow: the response, the new list, the device on its new topic) looks the same on the
// wire: it ends with the lock working under its new name once an owner confirms the move (POST
// /api/home/devices/:id/move, `hearth devices confirm-move`). Real broker (aedes), real SQLite file, real HTTP server.
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
const LOCK = 'front_door_lock.lock';
const LOCK_SET = 'zigbee2mqtt/Front door lock/set';
const PORCH_SET = 'zigbee2mqtt/Porch/set';
const NEW_SET = 'zigbee2mqtt/Front door/set';
const FAMILY = { id: 'chat:alice', roles: ['family'] };

describe('security: a forged rename does not free what a real lock owns', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-forged-rename-'));
  let broker: TestBroker;
  let zigbee: MqttClient;
  let forger: MqttClient;
  /** The lock's name in Zigbee2MQTT (what it really listens on). */
  let realName = 'Front door lock';
  /** Every command topic publish seen: `<topic> <payload>`. */
  const sent: string[] = [];

  const json = (payload: unknown) => (typeof payload === 'string' ? payload : JSON.stringify(payload));
  const home = servedHearth(
    () => broker.url,
    dir,
    (hearth) =>
      hearth.policy.add({ subject: 'role:family', targetType: 'kind', target: 'lock', action: 'actuate', effect: 'allow', note: 'test: family locks' }),
  );
  const { open, close, entity } = home;
  const h = () => home.hearth;
  const toolOf = home.actuatorToolOf;
  const mover = () =>
    h()
      .bridge.registry.refusedClaims()
      .find((r) => r.refused.id === LOCK && r.movedFrom);
  /** The list with the lock under another name, plus these entries. */
  const listWith = (lockName: string, ...more: unknown[]) => [
    ...LIST.map((d) => (d.friendly_name === 'Front door lock' ? { ...d, friendly_name: lockName } : d)),
    ...more,
  ];
  /** Lock, and wait for Hearth's answer: the audit row of the call. */
  const lockIt = async (tool: string) => {
    const result = await h().tools.call(tool, { action: 'lock' }, FAMILY);
    const row = h().audit.tail(1)[0]!;
    return { result, row };
  };

  before(async () => {
    broker = await startAedes();
    // Zigbee2MQTT and the lock: it takes commands on `<its name>/set` and reports on `<its name>`.
    zigbee = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    zigbee.on('message', (topic, payload) => {
      sent.push(`${topic} ${payload.toString()}`);
      if (topic !== `zigbee2mqtt/${realName}/set`) return;
      const state = (JSON.parse(payload.toString()) as { state?: string }).state;
      if (state) void zigbee.publishAsync(`zigbee2mqtt/${realName}`, json({ state, lock_state: state === 'LOCK' ? 'locked' : 'unlocked' }));
    });
    await zigbee.subscribeAsync('zigbee2mqtt/+/set', { qos: 1 });
    forger = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    await zigbee.publishAsync('zigbee2mqtt/bridge/info', readFileSync(join(FIXTURES, 'bridge-info.json'), 'utf8'), { qos: 1, retain: true });
    await zigbee.publishAsync('zigbee2mqtt/bridge/devices', json(LIST), { qos: 1, retain: true });
    await open();
    await waitFor('the lock', () => entity(LOCK)?.commandTopic === LOCK_SET && toolOf(LOCK));
  });
  after(async () => {
    await close();
    await zigbee?.endAsync(true);
    await forger?.endAsync(true);
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the lock works where it listens', async () => {
    const { result, row } = await lockIt(toolOf(LOCK)!.name);
    assert.equal(result.isError, undefined, result.text);
    assert.deepEqual({ entity: row.entityId, outcome: row.outcome }, { entity: LOCK, outcome: 'confirmed' });
    assert.ok(sent.includes(`${LOCK_SET} {"state":"LOCK"}`), sent.join('\n'));
  });

  it('a forged rename and newcomer get nothing: the lock keeps its topic, no tool, nothing sent; logged and shown', async () => {
    const lockTool = toolOf(LOCK)!.name;
    const before = sent.length;
    // What Zigbee2MQTT says after a rename, forged: the answer, the list, and the lock reporting on its new topic.
    await forger.publishAsync('zigbee2mqtt/bridge/response/device/rename', json({ data: { from: 'Front door lock', to: 'Porch' }, status: 'ok' }), { qos: 1 });
    const newcomer = await z2mEntry('YRD426NRSC', '0x00deadbeef000001', 'Front door lock');
    await forger.publishAsync('zigbee2mqtt/bridge/devices', json(listWith('Porch', newcomer)), { qos: 1, retain: true });
    await forger.publishAsync('zigbee2mqtt/Porch', json({ state: 'UNLOCK', lock_state: 'unlocked' }), { qos: 1 });
    const moved = await waitFor('the lock held back', mover);
    assert.equal(moved.topic, PORCH_SET);
    assert.deepEqual([...moved.movedFrom!], [LOCK_SET]);
    // The newcomer's lock (another IEEE address) claims the old topic: refused, the lock holds it.
    const claimant = await waitFor('the newcomer refused', () =>
      h()
        .bridge.registry.refusedClaims()
        .find((r) => r.refused.kind === 'lock' && r.refused.id !== LOCK),
    );
    // (Held by the lock's device: its entities share the `set` topic.)
    assert.deepEqual(
      { topic: claimant.topic, ownerDevice: claimant.awayOwner?.split('.')[0], moving: claimant.ownerMoving },
      { topic: LOCK_SET, ownerDevice: 'front_door_lock', moving: true },
    );
    // No entity commands either topic; the broker's gate still covers the lock's (a client there bypasses Hearth).
    for (const e of h().bridge.registry.entities()) assert.ok(e.commandTopic !== LOCK_SET && e.commandTopic !== PORCH_SET, e.id);
    assert.equal(h().bridge.registry.isCommandTopic(LOCK_SET), true);
    // No tool for either lock, nor the lock's tool name for anyone: a call is refused and audited as such.
    assert.equal(toolOf(LOCK), undefined);
    assert.equal(toolOf(claimant.refused.id), undefined);
    const { result, row } = await lockIt(lockTool);
    assert.equal(result.isError, true, result.text);
    assert.match(result.text!, /unknown tool/);
    assert.deepEqual({ tool: row.tool, outcome: row.outcome }, { tool: lockTool, outcome: 'failed' });
    assert.deepEqual(sent.slice(before), [], 'nothing sent, to the lock or the forger');
    // Logged once, with the topic, the device and where it was moved from; the newcomer's refusal names the lock.
    const lines = home.logs.lines.filter((l) => l.refused === LOCK && l.topic === PORCH_SET);
    assert.equal(lines.length, 1, JSON.stringify(lines));
    assert.deepEqual({ device: lines[0]!.device, from: lines[0]!.movedFrom }, { device: 'front_door_lock', from: [LOCK_SET] });
    assert.match(lines[0]!.msg, /confirm-move front_door_lock/);
    assert.equal(
      home.logs.lines.filter((l) => l.refused === claimant.refused.id && String(l.owner).startsWith('front_door_lock.') && l.moving === true).length,
      1,
    );
    // An owner sees why (the page's API, `hearth devices`); a guest may not.
    const seen = await request(`${home.url}/api/devices/refused`, { token: home.owner });
    assert.equal(seen.status, 200, seen.text);
    const said = (seen.json as Array<Record<string, unknown>>).find((r) => r.entity === LOCK);
    assert.deepEqual({ topic: said?.topic, movedFrom: said?.movedFrom }, { topic: PORCH_SET, movedFrom: [LOCK_SET] });
    assert.match(String(said?.words), /keeps its old topic .* until an owner confirms: if you renamed it, `hearth devices confirm-move front_door_lock`/);
    const newcomerSaid = (seen.json as Array<Record<string, unknown>>).find((r) => r.entity === claimant.refused.id);
    assert.deepEqual(
      { ownerMoving: newcomerSaid?.ownerMoving, ownerAway: newcomerSaid?.ownerAway, ownerDevice: newcomerSaid?.ownerDevice },
      { ownerMoving: true, ownerAway: false, ownerDevice: 'front_door_lock' },
    );
    assert.match(
      String(newcomerSaid?.words),
      /^its command topic zigbee2mqtt\/Front door lock\/set is held by front_door_lock\.\w+, which its source moved elsewhere/,
    );
    assert.equal((await request(`${home.url}/api/devices/refused`, { token: home.guest })).status, 403);
    const text = devicesText(devices(h().bridge), undefined, refusedClaimsJson(h().bridge));
    assert.match(
      text,
      /\n {2}front_door_lock was moved by its source .* until an owner confirms; if you renamed it, `hearth devices confirm-move front_door_lock`:\n(?: {4}.*\n)*? {4}Porch \(front_door_lock\.lock\): to zigbee2mqtt\/Porch\/set from zigbee2mqtt\/Front door lock\/set\n/,
    );
    // A guest cannot confirm the move; an owner confirming a topic it was not shown moves nothing.
    const move = (token: string, body: unknown) => request(`${home.url}/api/home/devices/front_door_lock/move`, { method: 'POST', token, body });
    assert.equal((await move(home.guest, { to: PORCH_SET })).status, 403);
    assert.equal((await move(home.owner, { to: 'zigbee2mqtt/Elsewhere/set' })).status, 409);
    assert.equal((await move(home.owner, { to: 7 })).status, 400);
    assert.equal((await request(`${home.url}/api/home/devices/living_room_light/move`, { method: 'POST', token: home.owner, body: {} })).status, 404);
    assert.ok(mover(), 'still waiting');
  });

  it('after a restart the forged list still moves nothing; the real list gives the lock back, working', async () => {
    await close();
    await open();
    await waitFor('the lock held back after the restart', mover);
    assert.equal(toolOf(LOCK), undefined);
    assert.equal(h().bridge.registry.isCommandTopic(LOCK_SET), true);
    // Zigbee2MQTT publishes its real list again.
    await zigbee.publishAsync('zigbee2mqtt/bridge/devices', json(LIST), { qos: 1, retain: true });
    await waitFor('the lock back', () => entity(LOCK)?.commandTopic === LOCK_SET && toolOf(LOCK));
    const { result, row } = await lockIt(toolOf(LOCK)!.name);
    assert.equal(result.isError, undefined, result.text);
    assert.deepEqual({ entity: row.entityId, outcome: row.outcome }, { entity: LOCK, outcome: 'confirmed' });
    assert.equal(sent.filter((s) => s.startsWith(`${PORCH_SET} `)).length, 0, 'nothing ever went to the forged name');
  });

  it('a genuine rename in Zigbee2MQTT: the lock waits on its old topic, then works under its new name once an owner confirms', async () => {
    // Zigbee2MQTT's rename (the owner asked in its frontend): the answer, the old state cleared, the new list, and
    // the lock listening and reporting under its new name.
    realName = 'Front door';
    await zigbee.publishAsync('zigbee2mqtt/bridge/response/device/rename', json({ data: { from: 'Front door lock', to: 'Front door' }, status: 'ok' }), {
      qos: 1,
    });
    await zigbee.publishAsync('zigbee2mqtt/Front door lock', '', { qos: 1, retain: true });
    await zigbee.publishAsync('zigbee2mqtt/bridge/devices', json(listWith('Front door')), { qos: 1, retain: true });
    await zigbee.publishAsync('zigbee2mqtt/Front door', json({ state: 'LOCK', lock_state: 'locked' }), { qos: 1 });
    const moved = await waitFor('the move waiting', mover);
    assert.equal(moved.topic, NEW_SET);
    assert.equal(toolOf(LOCK), undefined);
    // The owner confirms what the page shows them.
    const done = await request(`${home.url}/api/home/devices/front_door_lock/move`, { method: 'POST', token: home.owner, body: { to: NEW_SET } });
    assert.equal(done.status, 200, done.text);
    assert.ok(
      (done.json.moved as Array<{ entity: string; from: string[]; to: string[] }>).some(
        (m) => m.entity === LOCK && m.from.join() === LOCK_SET && m.to.join() === NEW_SET,
      ),
      done.text,
    );
    await waitFor('the lock under its new name', () => entity(LOCK)?.commandTopic === NEW_SET && toolOf(LOCK));
    assert.equal(mover(), undefined);
    // Its old topic is free (Zigbee2MQTT has no device of that name now); the new one is gated.
    assert.equal(h().bridge.registry.isCommandTopic(LOCK_SET), false);
    assert.equal(h().bridge.registry.isCommandTopic(NEW_SET), true);
    const before = sent.length;
    const { result, row } = await lockIt(toolOf(LOCK)!.name);
    assert.equal(result.isError, undefined, result.text);
    assert.deepEqual({ entity: row.entityId, outcome: row.outcome }, { entity: LOCK, outcome: 'confirmed' });
    assert.deepEqual(sent.slice(before), [`${NEW_SET} {"state":"LOCK"}`]);
    // Confirmed once: nothing waits any more.
    assert.equal((await request(`${home.url}/api/home/devices/front_door_lock/move`, { method: 'POST', token: home.owner, body: {} })).status, 404);
  });
});
