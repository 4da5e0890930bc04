// The bridge in its default mode: connected to a running `hearth start` over
// the HTTP API with a token kept in Node-RED credentials. State changes reach
// hearth-state through the daemon's event stream; hearth-device calls go
// through the daemon's policy and land in its audit log as the token's
// principal; an unlock held for approval goes through once `hearth approve`
// (the CLI, on the same database) grants it. A refused token says so.
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { waitFor } from '../helpers/wait.js';
import { useDaemonForNodes } from './hearth-daemon.js';
import { collect, load, nextMessage, node, unload, waitForStatus } from './support.js';

const daemon = useDaemonForNodes('nr-daemon');
const { dbPath, cli } = daemon;

function bridge(extra: Record<string, unknown> = {}) {
  return { id: 'bridge', type: 'hearth-bridge', version: 1, mode: 'daemon', daemonUrl: daemon.httpUrl, ...extra };
}

function flow() {
  return [
    bridge(),
    { id: 'st', type: 'hearth-state', z: 'f1', version: 1, bridge: 'bridge', entity: 'living_room_lamp.lamp', wires: [['changes']] },
    { id: 'changes', type: 'helper', z: 'f1' },
    {
      id: 'cs',
      type: 'hearth-current-state',
      z: 'f1',
      version: 1,
      bridge: 'bridge',
      entity: 'front_door.lock',
      op: 'is',
      value: 'locked',
      wires: [['yes'], ['no']],
    },
    { id: 'yes', type: 'helper', z: 'f1' },
    { id: 'no', type: 'helper', z: 'f1' },
    {
      id: 'lamp',
      type: 'hearth-device',
      z: 'f1',
      version: 1,
      bridge: 'bridge',
      mode: 'call',
      tool: 'living_room_lamp',
      args: '{"action":"turn_on"}',
      wires: [['out']],
    },
    {
      id: 'door',
      type: 'hearth-device',
      z: 'f1',
      version: 1,
      bridge: 'bridge',
      mode: 'call',
      tool: 'front_door_lock',
      args: '{"action":"unlock"}',
      approvalWait: 60,
      wires: [['out']],
    },
    { id: 'out', type: 'helper', z: 'f1' },
    {
      id: 'doorlock',
      type: 'hearth-device',
      z: 'f1',
      version: 1,
      bridge: 'bridge',
      mode: 'call',
      tool: 'front_door_lock',
      args: '{"action":"lock"}',
      wires: [['out']],
    },
    { id: 'ap', type: 'hearth-approval', z: 'f1', bridge: 'bridge', sendDecided: true, wires: [['requests'], ['decisions']] },
    { id: 'requests', type: 'helper', z: 'f1' },
    { id: 'decisions', type: 'helper', z: 'f1' },
    { id: 'au', type: 'hearth-audit', z: 'f1', bridge: 'bridge', tool: 'living_room_lamp', wires: [['rows']] },
    { id: 'rows', type: 'helper', z: 'f1' },
    { id: 'ftool', type: 'hearth-tool', z: 'f1', bridge: 'bridge', toolName: 'announce', description: 'say something', wires: [[]] },
    { id: 'catcher', type: 'catch', z: 'f1', scope: null, uncaught: false, wires: [['caught']] },
    { id: 'caught', type: 'helper', z: 'f1' },
  ];
}

afterEach(async () => {
  await unload();
});

describe('hearth-bridge connected to a running daemon', () => {
  it("state changes arrive through the daemon; a device call is the token principal in the daemon's audit log", async () => {
    await load(flow(), { bridge: { token: daemon.token } });
    await waitForStatus('st', (s) => s.fill === 'green' && /connected/.test(s.text ?? ''));
    await waitForStatus('lamp', (s) => /connected/.test(s.text ?? ''));
    const changed = nextMessage('changes', 15_000, (m) => m.payload === 'on');
    const out = nextMessage('out', 15_000);
    const audited = nextMessage('rows', 15_000);
    node('lamp').receive({});
    const msg = await out;
    const row = (await audited).payload;
    assert.equal(row.id, msg.payload.auditId, "hearth-audit on the daemon bridge shows the daemon's row");
    assert.equal(row.outcome, 'confirmed');
    assert.equal(msg.payload.outcome, 'confirmed');
    assert.equal(msg.payload.entity, 'living_room_lamp.lamp');
    assert.equal(msg.payload.state.value, 'on');
    const change = await changed;
    assert.equal(change.data.old_state.value, 'off');
    const db = new Database(dbPath, { readonly: true });
    try {
      const row = db.prepare('SELECT principal, outcome, tool FROM audit WHERE id = ?').get(msg.payload.auditId) as Record<string, unknown>;
      assert.deepEqual(row, { principal: 'http:node-red', outcome: 'confirmed', tool: 'living_room_lamp' });
    } finally {
      db.close();
    }
    const yes = nextMessage('yes');
    node('cs').receive({});
    assert.equal((await yes).payload, 'locked');
  });

  it('an unlock held by a confirm rule goes through when `hearth approve` grants it on the same database', async () => {
    await load(flow(), { bridge: { token: daemon.token } });
    await waitForStatus('door', (s) => /connected/.test(s.text ?? ''));
    const out = nextMessage('out', 60_000);
    const requested = nextMessage('requests', 20_000, (m) => m.topic === 'requested' && m.payload.tool === 'front_door_lock');
    const decidedElsewhere = nextMessage('requests', 30_000, (m) => m.topic === 'decided');
    node('door').receive({});
    // The CLI sees the request the Node-RED node made: one database, one approvals table.
    let list: Array<{ id: string; principal: string; tool: string }> = [];
    const deadline = Date.now() + 60_000;
    while (!list.length && Date.now() < deadline) {
      list = JSON.parse(await cli(['approvals', '--json']));
      if (!list.length) await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(list.length, 1, 'one request waits');
    assert.equal(list[0].principal, 'http:node-red');
    assert.equal(list[0].tool, 'front_door_lock');
    await waitForStatus('door', (st) => st.fill === 'yellow' && /waiting for approval/.test(st.text ?? ''));
    // The approval node on the daemon bridge shows the same request, and the CLI's decision.
    assert.equal((await requested).payload.id, list[0].id);
    await cli(['approve', list[0].id]);
    const decided = await decidedElsewhere;
    assert.equal(decided.requestId, list[0].id);
    // Granted, or already used by the node's call made again: both say the CLI decided.
    assert.ok(['granted', 'used'].includes(decided.payload.status), decided.payload.status);
    assert.match(String(decided.payload.by), /^cli:/);
    const msg = await out;
    assert.equal(msg.payload.outcome, 'confirmed');
    assert.equal(msg.payload.approvalId, list[0].id);
    assert.equal(msg.payload.state.value, 'unlocked');
  });

  it('a hearth-approval node on the daemon bridge decides a held unlock over the API; the CLI sees it decided', async () => {
    await load(flow(), { bridge: { token: daemon.token } });
    await waitForStatus('doorlock', (s) => /connected/.test(s.text ?? ''));
    let out = nextMessage('out', 30_000);
    node('doorlock').receive({});
    assert.equal((await out).payload.state.value, 'locked');
    out = nextMessage('out', 60_000);
    const requested = nextMessage('requests', 20_000, (m) => m.topic === 'requested' && m.payload.args.action === 'unlock');
    node('door').receive({});
    const req = await requested;
    const decision = nextMessage('decisions', 20_000);
    node('ap').receive({ payload: 'allow_once', requestId: req.requestId });
    const d = await decision;
    assert.equal(d.payload.status, 'allow_once');
    const msg = await out;
    assert.equal(msg.payload.outcome, 'confirmed');
    assert.equal(msg.payload.approvalId, req.requestId);
    const all = JSON.parse(await cli(['approvals', '--all', '--json'])) as Array<{ id: string; status: string; decidedBy: string }>;
    const row = all.find((a) => a.id === req.requestId)!;
    assert.equal(row.status, 'used');
    assert.equal(row.decidedBy, 'http:node-red');
    // A decision for nothing pending is named.
    const caught = collect('caught');
    node('ap').receive({ payload: 'deny', requestId: 'no-such-approval' });
    await waitFor('the refusal', () => caught.length >= 1, 10_000);
    assert.match(caught[0].error.message, /no pending approval or permission request "no-such-approval"/);
  });

  it('a flow-defined tool on the daemon bridge is provided to the daemon (daemon-tool.test.ts runs it)', async () => {
    await load(flow(), { bridge: { token: daemon.token } });
    await waitForStatus('ftool', (x) => x.fill === 'green' && /announce ready/.test(x.text ?? ''), 20_000);
  });

  it('a refused token turns every node red with the reason', async () => {
    await load(flow(), { bridge: { token: 'not-a-token' } });
    const s = await waitForStatus('st', (x) => x.fill === 'red' && /error/.test(x.text ?? ''));
    assert.match(s.text ?? '', /refused the token/);
    const caught = collect('caught');
    node('lamp').receive({});
    await waitFor('the call fails', () => caught.length >= 1, 10_000);
    assert.match(caught[0].error.message, /401/);
  });
});
