// Issue 15, finding 10: the audit says only what is known. A command that left
// is never recorded `failed` because the broker connection dropped: it is
// `unconfirmed` (the device may have acted), and a matching report that comes
// later appends a chained "confirmed late" entry to the call (the call's own
// entries are never edited). Real brokers (aedes and mosquitto, and an aedes
// that holds back its acknowledgement), a real SQLite file.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Aedes } from 'aedes';
import Database from 'better-sqlite3';
import mqtt from 'mqtt';
import { SqliteAuditLog } from '../../src/audit/store.js';
import { brokerKinds, type TestBroker } from '../helpers/brokers.js';
import { OWNER, startHome, type TestHome } from '../helpers/home.js';
import { waitFor } from '../helpers/wait.js';
import { useHome } from '../helpers/use-home.js';

/** The entries the log holds for a call, oldest first (read through a connection of its own). */
function entriesOf(home: TestHome, callId: number): Array<{ id: number; kind: string; outcome: string | null; error: string | null }> {
  const raw = new Database(home.hearth.db.name, { readonly: true });
  try {
    return raw.prepare('SELECT id, kind, outcome, error FROM audit_entry WHERE id = ? OR call_id = ? ORDER BY id').all(callId, callId) as never;
  } finally {
    raw.close();
  }
}

async function approvedCall(home: TestHome, tool: string, args: Record<string, unknown>) {
  const held = await home.hearth.tools.call(tool, args, OWNER);
  assert.match(held.text!, /^needs approval/);
  assert.equal(home.hearth.approvals.grant((held.details as { approvalId: string }).approvalId, 'cli:test-person'), true);
  return home.hearth.tools.call(tool, args, OWNER);
}

for (const { kind, start } of brokerKinds) {
  describe(`audit outcomes after a lost broker, on ${kind}`, () => {
    // The door takes long enough to open that the broker goes away while it moves.
    const home = useHome({ broker: start, travelMs: 1500 });

    it('a lock that reports jammed after the command: failed, because the device said so', async () => {
      const reporter = await mqtt.connectAsync(home.broker.url, { protocolVersion: 4 });
      try {
        const sent = home.commands().length;
        const unlocking = approvedCall(home, 'front_door_lock', { action: 'unlock' });
        await waitFor('the unlock command left', () =>
          home
            .commands()
            .slice(sent)
            .some((c) => c.topic === 'hearth-demo/front_door/lock/set'),
        );
        await reporter.publishAsync('hearth-demo/front_door/lock', 'JAMMED', { qos: 1 });
        const res = await unlocking;
        assert.equal(res.isError, true);
        assert.match(res.text!, /^failed: "Front door lock" reported jammed after the command/, res.text);
        const row = home.hearth.audit.get((res.details as { auditId: number }).auditId)!;
        assert.deepEqual([row.outcome, row.error], ['failed', 'the device reported jammed']);
      } finally {
        await reporter.endAsync(true);
      }
      await waitFor('the simulated lock settles', () => home.hearth.bridge.cache.get('front_door.lock')?.value === 'unlocked');
    });

    it('a jammed report followed at once by another (one read from the socket): the answer and the row quote the jam', async () => {
      const locked = await home.hearth.tools.call('front_door_lock', { action: 'lock' }, OWNER);
      assert.match(locked.text!, /^confirmed/, locked.text);
      const sent = home.commands().length;
      const unlocking = approvedCall(home, 'front_door_lock', { action: 'unlock' });
      await waitFor('the unlock command left', () =>
        home
          .commands()
          .slice(sent)
          .some((c) => c.topic === 'hearth-demo/front_door/lock/set'),
      );
      // Two reports in one tick, as MQTT.js hands over the packets of one socket read: the cache updates its state in
      // place, so the outcome must keep the report that decided it (the answer said "reported undefined").
      home.hearth.bridge.cache.handle('hearth-demo/front_door/lock', Buffer.from('JAMMED'));
      home.hearth.bridge.cache.handle('hearth-demo/front_door/lock', Buffer.from('UNLOCKING'));
      const res = await unlocking;
      assert.match(res.text!, /^failed: "Front door lock" reported jammed after the command/, res.text);
      const row = home.hearth.audit.get((res.details as { auditId: number }).auditId)!;
      assert.deepEqual([row.outcome, row.error], ['failed', 'the device reported jammed']);
      assert.match(String(row.echo), /"value":"jammed"/);
    });

    it('the broker restarts while the garage opens: unconfirmed (not failed), then a chained "confirmed late" entry', async () => {
      assert.equal(home.hearth.bridge.cache.get('garage_door.door')?.value, 'closed');
      const sent = home.commands().length;
      const opening = approvedCall(home, 'garage_door', { action: 'open' });
      await waitFor('the open command left', () =>
        home
          .commands()
          .slice(sent)
          .some((c) => c.topic === 'hearth-demo/garage_door/set'),
      );
      await home.broker.restart();
      const res = await opening;
      assert.match(res.text!, /^unconfirmed: sent open to "Garage door", then (lost the connection to the MQTT broker|it reported offline)/, res.text);
      assert.notEqual(res.isError, true);
      const id = (res.details as { auditId: number }).auditId;
      // The door opened meanwhile; once the bridge is back it hears so, and the call gets a follow-up.
      await waitFor('the late confirmation', () => home.hearth.audit.get(id)?.outcome === 'confirmed', 20_000);
      const row = home.hearth.audit.get(id)!;
      assert.match(row.error!, /^confirmed late, after \d/);
      assert.deepEqual(
        entriesOf(home, id).map((e) => [e.kind, e.outcome]),
        [
          ['call', 'pending'],
          ['outcome', 'unconfirmed'],
          ['outcome', 'confirmed'],
        ],
        'the call, its outcome, and the follow-up: three entries, none edited',
      );
      assert.equal(home.hearth.audit.verify().ok, true);
    });
  });
}

describe('a publish the broker never acknowledged', () => {
  let aedes: Aedes;
  let server: net.Server;
  const sockets = new Set<net.Socket>();
  let home: TestHome;
  const holding: Array<(err?: Error | null) => void> = [];
  let url: string;
  /** The connection (Hearth's) whose command is held: the one the cases drop. */
  let holder: { conn: net.Socket } | undefined;
  let hold = false;
  let heldQos: number | undefined;

  before(async () => {
    aedes = await Aedes.createBroker();
    // Hold back a command to the lamp: no PUBACK, and nothing delivered, until released.
    aedes.authorizePublish = (client, packet, done) => {
      if (hold && packet.topic === 'hearth-demo/living_room_lamp/set') {
        heldQos = packet.qos;
        holding.push(done);
        holder = client as unknown as { conn: net.Socket };
      } else done(null);
    };
    server = net.createServer((socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      aedes.handle(socket);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    url = `mqtt://127.0.0.1:${port}`;
    const broker: TestBroker = { url, port, kind: 'aedes', stop: async () => {}, restart: async () => {} };
    home = await startHome(broker);
  });
  after(async () => {
    for (const done of holding) done(new Error('test over'));
    await home?.close();
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await new Promise<void>((resolve) => aedes.close(() => resolve()));
  });

  // On MQTT 3.1.1 a command goes at QoS 0 (never delivered late, docs/deployment.md): no PUBACK is awaited, so
  // Hearth knows only that it wrote the command when the connection drops, and says it may have taken effect.
  it('the connection drops while the broker holds the command: it may have left, so unconfirmed, not failed', async () => {
    hold = true;
    const call = home.hearth.tools.call('living_room_lamp', { action: 'turn_on' }, OWNER);
    await waitFor('the broker holds the command', () => holding.length === 1);
    holder!.conn.destroy();
    const res = await call;
    assert.match(
      res.text!,
      /^unconfirmed: sent turn on to "Living room lamp", then lost the connection to the MQTT broker .*it may have taken effect/,
      res.text,
    );
    const row = home.hearth.audit.get((res.details as { auditId: number }).auditId)!;
    assert.equal(row.outcome, 'unconfirmed');
    assert.match(row.error!, /lost the broker connection while waiting for the device/);
    assert.equal(heldQos, 0, 'the command went at QoS 0 (MQTT 3.1.1)');
    hold = false;
    for (const done of holding.splice(0)) done(new Error('dropped by the test'));
    assert.equal(home.hearth.audit.verify().ok, true);
  });
  it('a newer command to the device ends the watch: a later report is not taken for the old call', async () => {
    await waitFor('reconnected after the last case', () => home.hearth.bridge.connection.connected, 10_000);
    hold = true;
    const call = home.hearth.tools.call('living_room_lamp', { action: 'turn_on' }, OWNER);
    await waitFor('the broker holds the command', () => holding.length === 1);
    holder!.conn.destroy();
    const res = await call;
    assert.match(res.text!, /^unconfirmed: /);
    const id = (res.details as { auditId: number }).auditId;
    hold = false;
    for (const done of holding.splice(0)) done(new Error('dropped by the test'));
    await waitFor('reconnected', () => home.hearth.bridge.connection.connected, 10_000);
    assert.match((await home.hearth.tools.call('living_room_lamp', { action: 'turn_off' }, OWNER)).text!, /^confirmed/);
    // Someone else turns the lamp on: that answers no call of Hearth's.
    const client = await mqtt.connectAsync(url, { protocolVersion: 4 });
    try {
      await client.publishAsync('hearth-demo/living_room_lamp/set', 'ON', { qos: 1 });
    } finally {
      await client.endAsync(true);
    }
    await waitFor('the lamp reports on', () => home.hearth.bridge.cache.get('living_room_lamp.lamp')?.value === 'on');
    assert.equal(home.hearth.audit.get(id)!.outcome, 'unconfirmed');
    assert.equal(home.hearth.audit.verify().ok, true);
  });
});

describe('a call a stopped process left pending', () => {
  const home = useHome({ travelMs: 300 });

  it('is marked interrupted at the next sweep, and the door opening later appends a chained "confirmed late"', async () => {
    // What a `hearth call` killed after publishing leaves: a pending call, begun an hour ago, by another process.
    const other = new SqliteAuditLog(home.hearth.db, { durability: 'connection', now: () => new Date(Date.now() - 3_600_000) });
    const id = other.begin({
      requestId: 'killed-call',
      principal: 'cli:test-owner',
      session: null,
      runId: null,
      tool: 'garage_door',
      entityId: 'garage_door.door',
      action: 'open',
      args: { action: 'open' },
      decision: 'confirm',
      ruleId: null,
      reason: 'approved',
    });
    assert.equal(home.hearth.bridge.cache.get('garage_door.door')?.value, 'closed');
    assert.equal(home.hearth.sweepPending(), 1);
    assert.equal(home.hearth.audit.get(id)!.outcome, 'interrupted');
    // The door was told to open (the command the dead process sent reaches it now) and reports open.
    const client = await mqtt.connectAsync(home.broker.url, { protocolVersion: 4 });
    try {
      await client.publishAsync('hearth-demo/garage_door/set', 'OPEN', { qos: 1 });
    } finally {
      await client.endAsync(true);
    }
    await waitFor('the late confirmation', () => home.hearth.audit.get(id)?.outcome === 'confirmed', 10_000);
    assert.match(home.hearth.audit.get(id)!.error!, /^confirmed late, after 36\d\d s/);
    assert.deepEqual(
      entriesOf(home, id).map((e) => [e.kind, e.outcome]),
      [
        ['call', 'pending'],
        ['outcome', 'interrupted'],
        ['outcome', 'confirmed'],
      ],
    );
    assert.equal(home.hearth.audit.verify().ok, true);
  });
});
