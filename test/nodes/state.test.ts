// hearth-state and hearth-current-state in the Node-RED test helper, on the
// demo home over a real broker: state changes arrive as MQTT messages from the
// simulator (after a tool call) or straight from a publisher; globs, to/from,
// `for`, unavailability and the read check of the node's principal.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import mqtt from 'mqtt';
import { OWNER } from '../helpers/home.js';
import { waitFor } from '../helpers/wait.js';
import { hearthStateFeed } from '../../nodes/lib/bridge.js';
import { StateTrigger, condition, type Clock, type StateChange } from '../../nodes/lib/state.js';
import { bridgeDef, collect, load, nextMessage, node, useDemoHome, waitForStatus } from './support.js';

const demo = useDemoHome();
const lamp = () => demo.home.hearth.bridge.cache.get('living_room_lamp.lamp');

async function setLamp(action: 'turn_on' | 'turn_off'): Promise<void> {
  const want = action === 'turn_on' ? 'on' : 'off';
  if (lamp()?.value === want) return;
  const r = await demo.home.hearth.tools.call('living_room_lamp', { action }, OWNER);
  assert.ok(!r.isError, r.text);
  await waitFor(`lamp ${want}`, () => lamp()?.value === want, 5000);
}

function flow() {
  return [
    bridgeDef(demo.home),
    { id: 'st-on', type: 'hearth-state', z: 'f1', bridge: 'bridge', entity: 'living_room_lamp.*', to: 'on', wires: [['on']] },
    { id: 'on', type: 'helper', z: 'f1' },
    { id: 'st-any', type: 'hearth-state', z: 'f1', bridge: 'bridge', area: 'living*', kind: 'switch|light', ignoreUnavailable: false, wires: [['any']] },
    { id: 'any', type: 'helper', z: 'f1' },
    { id: 'st-avail', type: 'hearth-state', z: 'f1', bridge: 'bridge', entity: 'living_room_lamp.lamp', ignoreUnavailable: true, wires: [['avail']] },
    { id: 'avail', type: 'helper', z: 'f1' },
    { id: 'st-denied', type: 'hearth-state', z: 'f1', bridge: 'bridge', entity: 'living_room_lamp.lamp', wires: [['denied']] },
    { id: 'denied', type: 'helper', z: 'f1' },
    { id: 'st-for', type: 'hearth-state', z: 'f1', bridge: 'bridge', entity: 'living_room_lamp.lamp', from: 'off', to: 'on', for: 1, wires: [['held']] },
    { id: 'held', type: 'helper', z: 'f1' },
    { id: 'cs-on', type: 'hearth-current-state', z: 'f1', bridge: 'bridge', entity: 'living_room_lamp.lamp', op: 'is', value: 'on', wires: [['yes'], ['no']] },
    {
      id: 'cs-warm',
      type: 'hearth-current-state',
      z: 'f1',
      bridge: 'bridge',
      entity: 'living_room_climate.temperature',
      op: 'above',
      value: '-100',
      wires: [['yes'], ['no']],
    },
    {
      id: 'cs-bad',
      type: 'hearth-current-state',
      z: 'f1',
      bridge: 'bridge',
      entity: 'living_room_climate.temperature',
      op: 'below',
      value: 'warm',
      wires: [['yes'], ['no']],
    },
    // "is not" is how a person writes it; the node's word is is_not: an error, not a silent "is".
    {
      id: 'cs-badop',
      type: 'hearth-current-state',
      z: 'f1',
      bridge: 'bridge',
      entity: 'living_room_lamp.lamp',
      op: 'is not',
      value: 'on',
      wires: [['yes'], ['no']],
    },
    { id: 'yes', type: 'helper', z: 'f1' },
    { id: 'no', type: 'helper', z: 'f1' },
    { id: 'catcher', type: 'catch', z: 'f1', scope: null, uncaught: false, wires: [['caught']] },
    { id: 'caught', type: 'helper', z: 'f1' },
  ];
}

describe('hearth-state', () => {
  before(async () => {
    // flow:st-denied may read nothing of the lamp: the one read check must keep it silent.
    demo.home.hearth.policy.add({
      subject: 'flow:st-denied',
      targetType: 'entity',
      target: 'living_room_lamp.lamp',
      action: 'read',
      effect: 'deny',
      note: 'test: a node that may not read the lamp',
    });
    await setLamp('turn_off');
  });

  it('fires on real state changes with the new and old state; to, globs on area and kind; a read-denied entity never fires', async () => {
    await load(flow());
    await waitForStatus('st-on', (s) => /connected/.test(s.text ?? ''));
    const on = collect('on');
    const any = collect('any');
    const denied = collect('denied');
    const first = nextMessage('on');
    await setLamp('turn_on');
    const msg = await first;
    assert.equal(msg.topic, 'living_room_lamp.lamp');
    assert.equal(msg.payload, 'on');
    assert.equal(msg.data.new_state.value, 'on');
    assert.equal(msg.data.old_state.value, 'off');
    assert.equal(msg.entity.kind, 'switch');
    assert.equal(msg.entity.area, 'Living room');
    assert.equal(typeof msg.data.age, 'number');
    assert.equal(msg.data.initial, false);
    const off = nextMessage('any', 10_000, (m) => m.payload === 'off');
    await setLamp('turn_off');
    await off;
    assert.deepEqual(
      any.map((m) => m.payload),
      ['on', 'off'],
      'the area+kind node saw both changes',
    );
    assert.equal(on.length, 1, 'to=on did not fire for off');
    assert.equal(denied.length, 0, 'a node that may not read the lamp never fires');
  });

  it('fires only once the value held `for` the set time, and skips changes to or from unavailable', async () => {
    await load(flow());
    await waitForStatus('st-for', (s) => /connected/.test(s.text ?? ''));
    const held = nextMessage('held', 15_000);
    await setLamp('turn_on');
    const msg = await held;
    assert.equal(msg.payload, 'on');
    assert.ok(msg.data.age >= 1000, `fired after the value held 1 s (age ${msg.data.age})`);

    // A publisher on the broker says the lamp went away and came back.
    const avail = collect('avail');
    const any = collect('any');
    const client = await mqtt.connectAsync(demo.broker.url, { protocolVersion: 4 });
    try {
      const gone = nextMessage('any', 10_000, (m) => m.data.new_state.available === false);
      await client.publishAsync('hearth-demo/living_room_lamp/availability', 'offline', { retain: true });
      await gone;
      const back = nextMessage('any', 10_000, (m) => m.data.new_state.available === true);
      await client.publishAsync('hearth-demo/living_room_lamp/availability', 'online', { retain: true });
      await back;
      const changed = nextMessage('avail', 10_000);
      await setLamp('turn_off');
      assert.equal((await changed).payload, 'off');
    } finally {
      await client.endAsync();
    }
    assert.ok(any.length >= 3);
    assert.deepEqual(
      avail.map((m) => m.payload),
      ['off'],
      'ignoreUnavailable skipped the offline and online changes',
    );
  });
});

describe('the trigger controller on the real state cache', () => {
  it('a value that does not hold for the `for` time never fires', async () => {
    await setLamp('turn_off');
    const timers: Array<{ fn: () => void; cancelled: boolean }> = [];
    const clock: Clock = {
      now: () => Date.now(),
      setTimeout: (fn) => {
        const t = { fn, cancelled: false };
        timers.push(t);
        return t;
      },
      clearTimeout: (h) => ((h as { cancelled: boolean }).cancelled = true),
    };
    const fired: StateChange[] = [];
    const trigger = new StateTrigger({ entity: 'living_room_lamp.lamp', to: 'on', forMs: 60_000 }, (c) => fired.push(c), clock);
    // The test home is src/, the nodes are built on dist/: the same class from two builds.
    await trigger.start(hearthStateFeed(demo.home.hearth as unknown as Parameters<typeof hearthStateFeed>[0], OWNER));
    assert.equal(trigger.following, 1);
    await setLamp('turn_on');
    await waitFor('a wait for the value to hold', () => trigger.waiting === 1);
    await setLamp('turn_off');
    await waitFor('the wait cancelled', () => trigger.waiting === 0);
    assert.equal(timers.length, 1);
    assert.equal(timers[0].cancelled, true);
    assert.equal(fired.length, 0);
    // A value that holds: its timer fires.
    await setLamp('turn_on');
    await waitFor('another wait', () => trigger.waiting === 1);
    timers[1].fn();
    assert.equal(fired.length, 1);
    assert.equal(fired[0].newState.value, 'on');
    trigger.stop();
    await setLamp('turn_off');
  });

  it('conditions: is / is not with globs, above / below with numbers, a bad limit named', () => {
    assert.equal(condition('is', 'on|open*')('opening'), true);
    assert.equal(condition('is_not', 'on')('ON'), false);
    assert.equal(condition('above', '21')(21.5), true);
    assert.equal(condition('above', '21')('21.5'), true);
    assert.equal(condition('below', '21')('unavailable'), false);
    assert.throws(() => condition('below', 'warm'), /"below" needs a number to compare with, got "warm"/);
  });
});

describe('hearth-current-state', () => {
  it('routes by the state now; an unknown entity and a bad condition reach a Catch node', async () => {
    await setLamp('turn_on');
    await load(flow());
    await waitForStatus('cs-on', (s) => /connected/.test(s.text ?? ''));
    let yes = nextMessage('yes');
    node('cs-on').receive({ payload: 'go' });
    let msg = await yes;
    assert.equal(msg.payload, 'on');
    assert.equal(msg.data.id, 'living_room_lamp.lamp');
    yes = nextMessage('yes');
    node('cs-warm').receive({});
    assert.equal(typeof (await yes).payload, 'number');
    await setLamp('turn_off');
    // The bridge's own Hearth hears the change on its own connection.
    const bridgeHearth = await node('bridge').controller.ready();
    await waitFor('the bridge hears off', () => bridgeHearth.bridge.cache.get('living_room_lamp.lamp')?.value === 'off');
    const no = nextMessage('no');
    node('cs-on').receive({});
    msg = await no;
    assert.equal(msg.payload, 'off');
    const caught = collect('caught');
    node('cs-on').receive({ entity: 'nope.nothing' });
    node('cs-bad').receive({});
    node('cs-badop').receive({});
    await waitFor('three errors caught', () => caught.length >= 3, 5000);
    const texts = caught.map((m) => m.error.message).join('\n');
    assert.match(texts, /no entity "nope.nothing" this node may read/);
    assert.match(texts, /"below" needs a number to compare with, got "warm"/);
    assert.match(texts, /"is not" is not a comparison; one of is, is_not, above, below/);
  });
});
