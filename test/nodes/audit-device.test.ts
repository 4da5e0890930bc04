// hearth-device and hearth-audit in the Node-RED test helper: reads and calls
// straight from a flow as flow:<node id>, through policy and audit; the audit
// rows as messages, filtered, from this process and from another writer.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { waitFor } from '../helpers/wait.js';
import { bridgeDef, collect, load, nextMessage, node, useDemoHome, waitForStatus } from './support.js';

const demo = useDemoHome();

const lamp = () => demo.home.hearth.bridge.cache.get('living_room_lamp.lamp')?.value;
const lock = () => demo.home.hearth.bridge.cache.get('front_door.lock')?.value;

function flow() {
  return [
    bridgeDef(demo.home),
    { id: 'dev-read', type: 'hearth-device', z: 'f1', bridge: 'bridge', mode: 'read', entity: 'living_room_lamp.lamp', wires: [['out']] },
    {
      id: 'dev-call',
      type: 'hearth-device',
      z: 'f1',
      bridge: 'bridge',
      mode: 'call',
      tool: 'living_room_lamp',
      args: '{"action":"turn_on"}',
      roles: 'owner',
      wires: [['out']],
    },
    {
      id: 'dev-v1',
      type: 'hearth-device',
      z: 'f1',
      bridge: 'bridge',
      version: 1,
      mode: 'call',
      tool: 'living_room_lamp',
      args: '{"action":"turn_on"}',
      roles: 'owner',
      wires: [['out']],
    },
    {
      id: 'dev-v1-guest',
      type: 'hearth-device',
      z: 'f1',
      bridge: 'bridge',
      version: 1,
      mode: 'call',
      tool: 'living_room_lamp',
      args: '{"action":"turn_on"}',
      wires: [['out']],
    },
    {
      id: 'dev-typed',
      type: 'hearth-device',
      z: 'f1',
      bridge: 'bridge',
      version: 1,
      mode: 'call',
      tool: 'living_room_lamp',
      argsType: 'jsonata',
      args: '{"action": payload.on ? "turn_on" : "turn_off"}',
      roles: 'owner',
      wires: [['out']],
    },
    {
      id: 'dev-msg',
      type: 'hearth-device',
      z: 'f1',
      bridge: 'bridge',
      version: 1,
      mode: 'call',
      tool: 'living_room_lamp',
      argsType: 'msg',
      args: 'lampArgs',
      roles: 'owner',
      wires: [['out']],
    },
    {
      id: 'dev-guest',
      type: 'hearth-device',
      z: 'f1',
      bridge: 'bridge',
      mode: 'call',
      tool: 'living_room_lamp',
      args: '{"action":"turn_on"}',
      roles: '',
      wires: [['out']],
    },
    {
      id: 'dev-door',
      type: 'hearth-device',
      z: 'f1',
      bridge: 'bridge',
      mode: 'call',
      tool: 'front_door_lock',
      args: '{"action":"unlock"}',
      roles: 'owner',
      approvalWait: 10,
      wires: [['out']],
    },
    { id: 'out', type: 'helper', z: 'f1' },
    { id: 'ap', type: 'hearth-approval', z: 'f1', bridge: 'bridge', wires: [['requests'], []] },
    { id: 'requests', type: 'helper', z: 'f1' },
    { id: 'au-all', type: 'hearth-audit', z: 'f1', bridge: 'bridge', outcomes: '', wires: [['rows']] },
    { id: 'rows', type: 'helper', z: 'f1' },
    { id: 'au-denied', type: 'hearth-audit', z: 'f1', bridge: 'bridge', outcomes: 'denied', wires: [['denied']] },
    { id: 'denied', type: 'helper', z: 'f1' },
    { id: 'au-flow', type: 'hearth-audit', z: 'f1', bridge: 'bridge', principal: 'flow:*', entity: 'living_room_lamp.*', wires: [['flowrows']] },
    { id: 'flowrows', type: 'helper', z: 'f1' },
    { id: 'catcher', type: 'catch', z: 'f1', scope: null, uncaught: false, wires: [['caught']] },
    { id: 'caught', type: 'helper', z: 'f1' },
  ];
}

describe('hearth-device', () => {
  before(async () => {
    await demo.home.hearth.tools.call('living_room_lamp', { action: 'turn_off' }, { id: 'cli:setup', roles: ['owner'] });
    await waitFor('lamp off', () => lamp() === 'off');
  });

  it('reads an entity state (msg.entity overrides) and calls a tool as flow:<node id>, with an audit row', async () => {
    await load(flow());
    await waitForStatus('dev-call', (s) => /connected/.test(s.text ?? ''));
    let out = nextMessage('out');
    node('dev-read').receive({});
    let msg = await out;
    assert.equal(msg.payload, 'off');
    assert.equal(msg.state.available, true);
    assert.equal(msg.entity.id, 'living_room_lamp.lamp');
    out = nextMessage('out');
    node('dev-read').receive({ entity: 'living_room_climate.temperature' });
    msg = await out;
    assert.equal(typeof msg.payload, 'number');
    assert.equal(msg.entity.kind, 'sensor');

    out = nextMessage('out', 10_000);
    // An inject's timestamp: the configured arguments.
    node('dev-call').receive({ payload: Date.now() });
    msg = await out;
    assert.match(msg.payload, /^confirmed: /);
    assert.equal(lamp(), 'on');
    const row = demo.home.hearth.audit.get(msg.result.auditId)!;
    assert.equal(row.principal, 'flow:dev-call');
    assert.equal(row.outcome, 'confirmed');
    // An action word as payload.
    out = nextMessage('out', 10_000);
    node('dev-call').receive({ payload: 'turn_off' });
    await out;
    assert.equal(lamp(), 'off');
  });

  it('version 1 sends {outcome, entity, state, auditId, approvalId} in msg.payload and the sentence in msg.text; a version 0 node keeps the text', async () => {
    await load(flow());
    await waitForStatus('dev-v1', (s) => /connected/.test(s.text ?? ''));
    let out = nextMessage('out', 10_000);
    node('dev-v1').receive({ payload: 'turn_on' });
    let msg = await out;
    assert.equal(msg.payload.outcome, 'confirmed');
    assert.equal(msg.payload.entity, 'living_room_lamp.lamp');
    assert.equal(msg.payload.state.value, 'on');
    assert.equal(msg.payload.approvalId, null);
    assert.equal(demo.home.hearth.audit.get(msg.payload.auditId)!.principal, 'flow:dev-v1');
    assert.match(msg.text, /^confirmed: /);
    // A state word (from a hearth-state node) is not an action: the configured arguments hold.
    out = nextMessage('out', 10_000);
    node('dev-v1').receive({ payload: 'off' });
    msg = await out;
    assert.equal(msg.payload.state.value, 'on');
    out = nextMessage('out', 10_000);
    node('dev-v1').receive({ payload: 'turn_off' });
    msg = await out;
    assert.equal(msg.payload.state.value, 'off');
    out = nextMessage('out', 10_000);
    node('dev-v1').receive({ payload: 'turn_on' });
    await out;
    // The flow from before `version`: msg.payload is still the sentence (and msg.text has it too).
    out = nextMessage('out', 10_000);
    node('dev-call').receive({ payload: 'turn_off' });
    msg = await out;
    assert.match(msg.payload, /^confirmed: /);
    assert.equal(msg.text, msg.payload);
    // A refusal: the Catch node gets the data too.
    const caught = collect('caught');
    node('dev-v1-guest').receive({});
    await waitFor('refusal caught', () => caught.length >= 1, 5000);
    assert.equal(caught[0].payload.outcome, 'denied');
    assert.equal(caught[0].payload.entity, 'living_room_lamp.lamp');
    assert.match(caught[0].text, /not allowed/);
    assert.equal(lamp(), 'off');
  });

  it('arguments from a typed input: JSONata on the message, or a msg property; a bad one is named', async () => {
    await load(flow());
    await waitForStatus('dev-typed', (s) => /connected/.test(s.text ?? ''));
    let out = nextMessage('out', 10_000);
    node('dev-typed').receive({ payload: { on: true } });
    assert.equal((await out).payload.state.value, 'on');
    out = nextMessage('out', 10_000);
    node('dev-msg').receive({ lampArgs: { action: 'turn_off' } });
    assert.equal((await out).payload.state.value, 'off');
    const caught = collect('caught');
    node('dev-msg').receive({ lampArgs: 'turn_on' });
    await waitFor('bad arguments caught', () => caught.length >= 1, 5000);
    assert.match(caught[0].error.message, /arguments \(msg lampArgs\) must be an object, got "turn_on"/);
    assert.equal(lamp(), 'off');
  });

  it('a call the policy refuses goes to a Catch node with the result; unknown names too', async () => {
    await load(flow());
    await waitForStatus('dev-guest', (s) => /connected/.test(s.text ?? ''));
    const caught = collect('caught');
    node('dev-guest').receive({});
    await waitFor('refusal caught', () => caught.length >= 1, 5000);
    assert.match(caught[0].error.message, /not allowed/);
    assert.equal(demo.home.hearth.audit.get(caught[0].result.details.auditId)!.outcome, 'denied');
    assert.equal(lamp(), 'off');
    node('dev-read').receive({ entity: 'nope.nothing' });
    node('dev-call').receive({ tool: 'no_such_tool' });
    await waitFor('two more caught', () => caught.length >= 3, 5000);
    assert.match(caught[1].error.message + caught[2].error.message, /unknown entity "nope.nothing"/);
    assert.match(caught[1].error.message + caught[2].error.message, /unknown tool "no_such_tool"/);
  });

  it('a call a confirm rule holds waits for a person (hearth-approval) and then goes through', async () => {
    await load(flow());
    await waitForStatus('ap', (s) => s.fill === 'green');
    const request = nextMessage('requests', 10_000, (m) => m.topic === 'requested' && m.payload.principal === 'flow:dev-door');
    const out = nextMessage('out', 15_000);
    node('dev-door').receive({});
    const req = await request;
    assert.equal(req.payload.kind, 'confirm');
    assert.equal(lock(), 'locked');
    node('ap').receive({ payload: 'allow_once', requestId: req.requestId });
    const msg = await out;
    assert.match(msg.payload, /^confirmed/);
    assert.equal(msg.result.approvalId, req.requestId);
    await waitFor('unlocked', () => lock() === 'unlocked', 5000);
    await demo.home.hearth.tools.call('front_door_lock', { action: 'lock' }, { id: 'cli:setup', roles: ['owner'] }, { approvalId: 'test setup' });
    await waitFor('locked again', () => lock() === 'locked', 5000);
  });
});

describe('hearth-audit', () => {
  it('emits each completed row once, filtered; rows of another writer on the same database arrive too', async () => {
    await load(flow());
    await waitForStatus('au-all', (s) => /connected/.test(s.text ?? ''));
    await node('bridge').controller.ready();
    const all = collect('rows');
    const denied = collect('denied');
    const flowRows = collect('flowrows');
    node('dev-call').receive({});
    node('dev-guest').receive({});
    await waitFor('two rows', () => all.length >= 2, 10_000);
    // Another writer: the test home's own Hearth (another connection, as `hearth start` would be).
    const other = await demo.home.hearth.tools.call('kitchen_light', { action: 'turn_on' }, { id: 'cli:elsewhere', roles: ['owner'] });
    const otherId = other.details!.auditId as number;
    await waitFor('the other row', () => all.some((m) => m.payload.id === otherId), 5000);
    await new Promise((r) => setTimeout(r, 1200));
    const ids = all.map((m) => m.payload.id);
    assert.equal(new Set(ids).size, ids.length, 'each row once');
    assert.ok(all.every((m) => m.payload.outcome !== 'pending'));
    assert.ok(all.every((m) => m.topic === `audit/${m.payload.outcome}`));
    assert.deepEqual(
      denied.map((m) => m.payload.principal),
      ['flow:dev-guest'],
    );
    assert.deepEqual(flowRows.map((m) => m.payload.principal).sort(), ['flow:dev-call', 'flow:dev-guest']);
    const row = all.find((m) => m.payload.id === otherId)!.payload;
    assert.equal(row.principal, 'cli:elsewhere');
    assert.equal(row.outcome, 'confirmed');
    assert.equal(row.entityId, 'kitchen_light.light');
    assert.equal(typeof row.hash, 'string');
  });
});
