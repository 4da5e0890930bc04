// A command confirmed while Hearth was moving to another node (#34): the garage door is opening when the node
// Hearth is on dies. The call is `unconfirmed` (the command had left; the door's report could not come back),
// Hearth reconnects to another node, reads the door's retained state there, and appends a chained
// "confirmed late" entry to the call. Nothing is sent again.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { OWNER, startHome, type TestHome } from '../helpers/home.js';
import { startNatsCluster, type TestCluster } from '../helpers/nats-cluster.js';
import { sleep, waitFor } from '../helpers/wait.js';

function entriesOf(home: TestHome, callId: number): Array<[string, string | null]> {
  const raw = new Database(home.hearth.db.name, { readonly: true });
  try {
    const rows = raw.prepare('SELECT kind, outcome FROM audit_entry WHERE id = ? OR call_id = ? ORDER BY id').all(callId, callId) as Array<{
      kind: string;
      outcome: string | null;
    }>;
    return rows.map((r) => [r.kind, r.outcome]);
  } finally {
    raw.close();
  }
}

describe('a command confirmed during the failover (NATS cluster)', () => {
  let broker: TestCluster;
  let home: TestHome;
  before(async () => {
    broker = await startNatsCluster();
    // The door takes long enough to open that the node dies while it moves.
    home = await startHome(broker, { travelMs: 1500 });
  });
  after(async () => {
    await home?.close();
    await broker?.stop();
  });

  it('unconfirmed when the node dies, then a chained "confirmed late" from the retained state on the new node', async () => {
    const connection = home.hearth.bridge.connection;
    const onNode = broker.nodeIndexOfPort(Number(connection.node!.split(':')[1]));
    const held = await home.hearth.tools.call('garage_door', { action: 'open' }, OWNER);
    if (/^needs approval/.test(held.text!)) home.hearth.approvals.grant((held.details as { approvalId: string }).approvalId, 'cli:test-person');
    const sent = home.commands().length;
    const opening = home.hearth.tools.call('garage_door', { action: 'open' }, OWNER);
    await waitFor('the open command left', () =>
      home
        .commands()
        .slice(sent)
        .some((c) => c.topic === 'hearth-demo/garage_door/set'),
    );
    await broker.killNode(onNode);
    const res = await opening;
    assert.match(res.text!, /^unconfirmed: /, res.text);
    const id = (res.details as { auditId: number }).auditId;
    await waitFor('the late confirmation', () => home.hearth.audit.get(id)?.outcome === 'confirmed', 30_000);
    assert.match(home.hearth.audit.get(id)!.error!, /^confirmed late, after \d/);
    assert.deepEqual(entriesOf(home, id), [
      ['call', 'pending'],
      ['outcome', 'unconfirmed'],
      ['outcome', 'confirmed'],
    ]);
    assert.notEqual(broker.nodeIndexOfPort(Number(connection.node!.split(':')[1])), onNode, 'on another node');
    await sleep(300);
    assert.equal(home.commands().filter((c) => c.topic === 'hearth-demo/garage_door/set').length, 1, 'the command left once');
    assert.equal(home.hearth.audit.verify().ok, true);
  });
});
