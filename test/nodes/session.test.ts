// hearth-session and hearth-approval in the Node-RED test helper, on a real
// broker with the simulated demo home and the offline intent model.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { waitFor } from '../helpers/wait.js';
import { bridgeDef, collect, load, nextMessage, node, useDemoHome, waitForStatus, type Msg } from './support.js';

const demo = useDemoHome();

const lamp = () => demo.home.hearth.bridge.cache.get('living_room_lamp.lamp')?.value;
const lock = () => demo.home.hearth.bridge.cache.get('front_door.lock')?.value;

function flow(session: Record<string, unknown> = {}, extra: Array<Record<string, unknown> & { id: string; type: string }> = []) {
  return [
    bridgeDef(demo.home),
    {
      id: 's1',
      type: 'hearth-session',
      z: 'f1',
      bridge: 'bridge',
      principal: 'chat:tester',
      roles: 'owner',
      ask: 'confirm',
      ephemeral: false,
      systemPrompt: '',
      wires: [['answer'], ['events']],
      ...session,
    },
    { id: 'answer', type: 'helper', z: 'f1' },
    { id: 'events', type: 'helper', z: 'f1' },
    { id: 'catcher', type: 'catch', z: 'f1', scope: null, uncaught: false, wires: [['caught']] },
    { id: 'caught', type: 'helper', z: 'f1' },
    ...extra,
  ];
}

describe('hearth-session', () => {
  it('answers a prompt: the lamp turns on, the answer carries the result, the events stream, the audit row exists', async () => {
    await demo.home.hearth.tools.call('living_room_lamp', { action: 'turn_off' }, { id: 'cli:setup', roles: ['owner'] });
    await waitFor('lamp off', () => lamp() === 'off');
    await load(flow());
    await waitForStatus('s1', (s) => s.fill === 'green' && /connected/.test(s.text ?? ''));
    const events = collect('events');
    const answer = nextMessage('answer', 15_000);
    node('s1').receive({ payload: 'turn on the living room lamp', topic: 'living-room' });
    const msg = await answer;

    assert.equal(lamp(), 'on');
    assert.equal(typeof msg.payload, 'string');
    assert.match(msg.payload, /lamp/i);
    assert.equal(msg.result.stopReason, 'completed');
    assert.equal(msg.result.principal, 'chat:tester');
    assert.equal(msg.topic, 'living-room');
    assert.match(msg.session, /^flow-s1-living-room$/);
    assert.deepEqual(
      msg.result.toolCalls.map((c: { name: string }) => c.name),
      ['living_room_lamp'],
    );
    assert.equal(msg.result.auditIds.length, 1);
    const row = demo.home.hearth.audit.get(msg.result.auditIds[0]);
    assert.ok(row, 'the audit row exists');
    assert.equal(row.outcome, 'confirmed');
    assert.equal(row.principal, 'chat:tester');
    assert.equal(row.entityId, 'living_room_lamp.lamp');
    assert.equal(row.session, msg.session);

    const types = events.map((e) => e.topic);
    for (const t of ['step', 'tool_call', 'tool_request', 'tool_result', 'token', 'done'])
      assert.ok(types.includes(t), `event ${t} streamed (${types.join(',')})`);
    const tokens = events
      .filter((e) => e.topic === 'token')
      .map((e) => e.payload.text)
      .join('');
    assert.ok(tokens.length > 0);
    assert.ok(events.every((e) => e.session === msg.session && e.turnId === msg.result.turnId));
    await waitForStatus('s1', (s) => s.fill === 'green' && /done/.test(s.text ?? ''));
    await waitForStatus('s1', (s) => s.fill === 'blue' && /thinking/.test(s.text ?? ''));
  });

  it('answers an audit question from the audit to an owner, by name, and acts on nothing (#42)', async () => {
    await load(flow());
    await waitForStatus('s1', (s) => s.fill === 'green' && /connected/.test(s.text ?? ''));
    const rows = demo.home.hearth.audit.digest().count;
    const answer = nextMessage('answer', 15_000);
    node('s1').receive({ payload: 'who turned on the living room lamp today?', topic: 'records' });
    const msg = await answer;
    assert.match(msg.payload, /tester \(chat\) asked to turn on the living room lamp .*: done and confirmed\./i);
    assert.deepEqual(
      msg.result.toolCalls.map((c: { name: string }) => c.name),
      ['get_audit'],
    );
    assert.deepEqual(msg.result.auditIds, []);
    assert.equal(demo.home.hearth.audit.digest().count, rows, 'a question is no audited call');
  });

  it('refuses a guest session the audit question plainly (#42)', async () => {
    const rows = demo.home.hearth.audit.digest().count;
    await load(flow({ principal: 'chat:visitor', roles: 'guest' }));
    await waitForStatus('s1', (s) => s.fill === 'green' && /connected/.test(s.text ?? ''));
    const refused = nextMessage('answer', 15_000);
    node('s1').receive({ payload: 'who turned on the living room lamp today?', topic: 'records-guest' });
    assert.equal((await refused).payload, 'Only someone allowed to read the audit can ask that: ask an owner.');
    assert.equal(demo.home.hearth.audit.digest().count, rows, 'a question is no audited call');
  });

  it('keeps one session per msg.session / msg.topic between messages; ephemeral sessions are new each time', async () => {
    await load(
      flow({}, [
        { id: 's2', type: 'hearth-session', z: 'f1', bridge: 'bridge', principal: 'chat:tester', roles: 'owner', ephemeral: true, wires: [['answer2'], []] },
        { id: 'answer2', type: 'helper', z: 'f1' },
      ]),
    );
    const ask = async (id: string, out: string, msg: Msg) => {
      const next = nextMessage(out, 15_000);
      node(id).receive(msg);
      return next;
    };
    const a = await ask('s1', 'answer', { payload: 'is the kitchen light on?', topic: 'kitchen' });
    const b = await ask('s1', 'answer', { payload: 'what is the temperature in the living room?', topic: 'kitchen' });
    const c = await ask('s1', 'answer', { payload: 'what is the temperature in the living room?', session: 'my-chat' });
    assert.equal(a.session, b.session);
    assert.equal(c.session, 'my-chat');
    const e1 = await ask('s2', 'answer2', { payload: 'what is the temperature in the living room?', topic: 'kitchen' });
    const e2 = await ask('s2', 'answer2', { payload: 'what is the temperature in the living room?', topic: 'kitchen' });
    assert.notEqual(e1.session, e2.session);
    assert.match(e1.session, /^ephemeral-/);
    assert.equal(e1.result.stopReason, 'completed');
  });

  it('sends bad input to a Catch node: an empty prompt, a malformed principal, a session of another principal', async () => {
    await load(flow());
    const caught = collect('caught');
    node('s1').receive({ payload: '' });
    node('s1').receive({ payload: 'hello', principal: 'nobody' });
    await waitFor('two errors caught', () => caught.length >= 2 && caught, 5000);
    assert.match(caught.map((m) => m.error.message).join('\n'), /non-empty string/);
    assert.match(caught.map((m) => m.error.message).join('\n'), /a principal looks like/);
    assert.ok(caught.every((m) => m.error.source.id === 's1'));

    const first = nextMessage('answer', 15_000);
    node('s1').receive({ payload: 'what is the temperature in the living room?', session: 'mine' });
    await first;
    node('s1').receive({ payload: 'hello', session: 'mine', principal: 'chat:someone-else' });
    await waitFor('third error caught', () => caught.length >= 3, 5000);
    assert.match(caught[2].error.message, /belongs to chat:tester/);
    await waitForStatus('s1', (s) => s.fill === 'red' && /error/.test(s.text ?? ''));
  });

  it('without a bridge the node says so, and its messages go to a Catch node', async () => {
    await load(flow({ bridge: '' }));
    await waitForStatus('s1', (s) => s.fill === 'red' && /bridge/.test(s.text ?? ''));
    const caught = nextMessage('caught');
    node('s1').receive({ payload: 'turn on the living room lamp' });
    assert.match((await caught).error.message, /hearth-bridge/);
  });
});

describe('hearth-approval', () => {
  const approvalFlow = (ask = 'confirm') =>
    flow({ ask }, [
      { id: 'ap', type: 'hearth-approval', z: 'f1', bridge: 'bridge', sendDecided: true, wires: [['requests'], ['results']] },
      { id: 'requests', type: 'helper', z: 'f1' },
      { id: 'results', type: 'helper', z: 'f1' },
    ]);

  it('a confirm rule holds the unlock: the turn waits, a person allows it, the lock opens, the row says who approved', async () => {
    await load(approvalFlow());
    // The hub attaches once the bridge is open; wait for it.
    await waitForStatus('ap', (s) => s.fill === 'green');
    assert.equal(lock(), 'locked');
    const request = nextMessage('requests', 15_000, (m) => m.topic === 'requested');
    const answer = nextMessage('answer', 20_000);
    node('s1').receive({ payload: 'unlock the front door', topic: 'door' });
    const req = await request;
    assert.equal(req.payload.kind, 'permission');
    assert.equal(req.payload.tool, 'front_door_lock');
    assert.deepEqual(req.payload.args, { action: 'unlock' });
    assert.equal(req.payload.principal, 'chat:tester');
    assert.match(req.payload.reason, /confirm|approv/i);
    await waitForStatus('s1', (s) => s.fill === 'yellow' && /waiting for approval/.test(s.text ?? ''));
    await waitForStatus('ap', (s) => s.fill === 'yellow' && /1 waiting/.test(s.text ?? ''));
    assert.equal(lock(), 'locked', 'nothing happens before the decision');

    const result = nextMessage('results');
    node('ap').receive({ payload: 'allow_once', requestId: req.requestId });
    const decided = await result;
    assert.equal(decided.payload.status, 'allow_once');
    assert.equal(decided.payload.by, 'flow:ap');
    const msg = await answer;
    assert.equal(msg.result.stopReason, 'completed');
    await waitFor('lock unlocked', () => lock() === 'unlocked', 5000);
    const row = demo.home.hearth.audit.get(msg.result.auditIds[0])!;
    assert.equal(row.outcome, 'confirmed');
    assert.equal(row.decision, 'confirm');
    assert.match(row.reason, /approved/);
    await demo.home.hearth.tools.call('front_door_lock', { action: 'lock' }, { id: 'cli:setup', roles: ['owner'] }, { approvalId: 'test setup' });
    await waitFor('locked again', () => lock() === 'locked', 5000);
  });

  it('a denied request leaves the lock locked; deciding it again goes to a Catch node', async () => {
    await load(approvalFlow());
    await waitForStatus('ap', (s) => s.fill === 'green');
    const request = nextMessage('requests', 15_000, (m) => m.topic === 'requested');
    const answer = nextMessage('answer', 20_000);
    node('s1').receive({ payload: 'unlock the front door' });
    const req = await request;
    node('ap').receive({ payload: { id: req.requestId, decision: 'deny' } });
    const msg = await answer;
    assert.equal(lock(), 'locked');
    assert.match(msg.result.toolCalls[0].result, /denied/);
    const caught = nextMessage('caught');
    node('ap').receive({ payload: 'allow_once', requestId: req.requestId });
    assert.match((await caught).error.message, /no pending approval or permission request/);
    const caught2 = nextMessage('caught');
    node('ap').receive({ payload: 'maybe', requestId: req.requestId });
    assert.match((await caught2).error.message, /allow_once, allow_always, deny/);
  });

  it('with ask=never the policy holds the call; the hold comes out as kind confirm, a grant lets the same call through', async () => {
    await load(approvalFlow('never'));
    await waitForStatus('ap', (s) => s.fill === 'green');
    const request = nextMessage('requests', 15_000, (m) => m.topic === 'requested' && m.payload.kind === 'confirm');
    const answer = nextMessage('answer', 15_000);
    node('s1').receive({ payload: 'unlock the front door', topic: 'held' });
    const [req, first] = await Promise.all([request, answer]);
    assert.equal(lock(), 'locked');
    assert.deepEqual(first.result.approvalIds, [req.requestId]);
    assert.equal(req.payload.tool, 'front_door_lock');

    const listed = nextMessage('results');
    node('ap').receive({ payload: 'list' });
    assert.ok((await listed).payload.some((r: { id: string }) => r.id === req.requestId));

    const decided = nextMessage('requests', 5000, (m) => m.topic === 'decided');
    node('ap').receive({ payload: 'allow_once', requestId: req.requestId });
    assert.equal((await decided).payload.status, 'granted');
    assert.equal(demo.home.hearth.approvals.get(req.requestId)?.decidedBy, 'flow:ap');

    const again = nextMessage('answer', 15_000);
    node('s1').receive({ payload: 'unlock the front door', topic: 'held' });
    const second = await again;
    await waitFor('lock unlocked', () => lock() === 'unlocked', 5000);
    assert.equal(demo.home.hearth.audit.get(second.result.auditIds[0])!.outcome, 'confirmed');
    assert.equal(demo.home.hearth.approvals.get(req.requestId)?.status, 'used');
    await demo.home.hearth.tools.call('front_door_lock', { action: 'lock' }, { id: 'cli:setup', roles: ['owner'] }, { approvalId: 'test setup' });
    await waitFor('locked again', () => lock() === 'locked', 5000);
  });
});
