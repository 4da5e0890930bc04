// Issue 40: an approval was not bound to where the command goes. A new discovery config moved a lock's command topic
// between the request and the grant, and the approved UNLOCK went to the new topic. The approval records the
// messages the call would publish (topics and exact payloads): a grant for a call whose messages changed is refused,
// says why and is audited, and a granted approval is used only by a call that sends what was asked. Real broker
// (aedes), real SQLite file, Home Assistant discovery, the approve method `hearth approve` runs.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decide } from '../../src/daemon/methods/approvals.js';
import { APPROVAL_GRANT_REFUSED_ACTION } from '../../src/policy/approvals.js';
import { type DiscoveredHome, openDiscoveredHome } from '../helpers/discovered-home.js';
import { waitFor } from '../helpers/wait.js';

const CONFIG = 'homeassistant/lock/front_door/config';
const lockConfig = (commandTopic: string) => ({
  name: 'Front door',
  unique_id: 'front_door_lock_1',
  command_topic: commandTopic,
  state_topic: 't/front_door/state',
});

describe('security: an approval is bound to where its command goes', () => {
  let home: DiscoveredHome;

  before(async () => {
    home = await openDiscoveredHome({
      listen: ['t/#'],
      // The lock reports what it was told, wherever its command topic is.
      respond: (topic, payload) => (topic.endsWith('/set') ? [['t/front_door/state', payload === 'UNLOCK' ? 'UNLOCKED' : 'LOCKED']] : undefined),
    });
    await home.publish(CONFIG, lockConfig('t/front_door/set'));
    await home.device.publishAsync('t/front_door/state', 'LOCKED', { retain: true });
    await waitFor('the front door', () => home.hearth.bridge.registry.entities().find((e) => e.name === 'Front door'));
  });
  after(() => home?.close());

  /**
   * Move the lock's command topic with a new discovery config, and confirm the move as an owner would (a move
   * waits for a person: test/security/forged-rename.test.ts).
   */
  async function moveTo(topic: string): Promise<void> {
    const registry = home.hearth.bridge.registry;
    const device = home.entity('Front door').deviceId;
    await home.publish(CONFIG, lockConfig(topic));
    await waitFor(`the move to ${topic} waiting`, () => registry.refusedClaims().some((r) => r.movedFrom && r.topic === topic));
    assert.ok(registry.confirmMove(device, topic).moved.length);
    // Left out while it waited, the lock's state topic is subscribed anew: the next call waits for the broker's
    // acknowledgement before it sends, so the lock's report is heard (test/security/confirmed-move-echo.test.ts).
    assert.equal(home.entity('Front door').commandTopic, topic);
  }

  const pending = () => home.hearth.approvals.list({ status: 'pending' });
  const unlockTopics = () => home.received.filter((m) => m.payload === 'UNLOCK').map((m) => m.topic);

  it('records where the held command goes and exactly what it says', async () => {
    home.clear();
    const held = await home.call('Front door', { action: 'unlock' });
    assert.match(held.text!, /^needs approval: /);
    const [approval] = pending();
    assert.deepEqual(approval.sends, [{ topic: 't/front_door/set', payload: 'UNLOCK' }]);
    assert.deepEqual(home.received, []);
    home.hearth.approvals.deny(approval.id, 'cli:test-owner');
  });

  it('a grant after a rediscovery moved the command topic is refused with the reason and audited; nothing is sent', async () => {
    home.clear();
    await home.call('Front door', { action: 'unlock' });
    const [approval] = pending();
    await moveTo('t/side_gate/set');
    assert.throws(
      () => decide(home.hearth.approvals, 'approve', { id: approval.id, by: 'owner-anna' }),
      (err: Error) => {
        assert.match(
          err.message,
          /approval [0-9a-f]+ was not granted: its command would now go to t\/side_gate\/set, not to t\/front_door\/set as when it was asked/,
        );
        return true;
      },
    );
    const after = home.hearth.approvals.get(approval.id)!;
    assert.equal(after.status, 'denied', 'it can never be granted');
    assert.match(after.refused ?? '', /t\/side_gate\/set/);
    const [row] = home.hearth.audit.list({ order: 'desc', limit: 1 });
    assert.equal(row.action, APPROVAL_GRANT_REFUSED_ACTION);
    assert.equal(row.principal, 'owner-anna');
    assert.equal(row.outcome, 'denied');
    assert.equal(row.entityId, home.entity('Front door').id);
    assert.match(row.reason, /Hearth refused owner-anna's grant of approval [0-9a-f]+, asked by cli:test-owner: its command would now go to t\/side_gate\/set/);
    // The same call again is a new request, showing the new destination.
    const again = await home.call('Front door', { action: 'unlock' });
    assert.match(again.text!, /^needs approval: /);
    const [fresh] = pending();
    assert.notEqual(fresh.id, approval.id);
    assert.deepEqual(fresh.sends, [{ topic: 't/side_gate/set', payload: 'UNLOCK' }]);
    home.hearth.approvals.deny(fresh.id, 'cli:test-owner');
    assert.deepEqual(unlockTopics(), [], 'no UNLOCK left Hearth');
  });

  it('a grant given before the topic moved is not used by the moved call; once asked anew and granted, it goes where it was asked to', async () => {
    await moveTo('t/front_door/set');
    home.clear();
    await home.call('Front door', { action: 'unlock' });
    const [approval] = pending();
    decide(home.hearth.approvals, 'approve', { id: approval.id, by: 'owner-anna' });
    await moveTo('t/side_gate/set');
    const moved = await home.call('Front door', { action: 'unlock' });
    assert.match(moved.text!, /^needs approval: /, 'the grant for the old topic does not carry the command to the new one');
    assert.equal(home.hearth.approvals.get(approval.id)?.status, 'granted', 'and it is not used up');
    assert.deepEqual(unlockTopics(), []);
    // Granted for where it goes now, it goes there, once.
    const [fresh] = pending();
    decide(home.hearth.approvals, 'approve', { id: fresh.id, by: 'owner-anna' });
    const done = await home.call('Front door', { action: 'unlock' });
    assert.match(done.text!, /^confirmed: /, done.text);
    assert.deepEqual(unlockTopics(), ['t/side_gate/set']);
  });
});
