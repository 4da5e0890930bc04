// The kinds of #31 in the Node-RED nodes, on the demo home over a real broker: hearth-device starts the
// simulated robot vacuum and sends it home (confirmed, in msg and in the audit as flow:<node id>);
// hearth-state emits the vacuum's activity as it changes; hearth-current-state reads a presence tracker
// and a firmware update that Home Assistant's discovery announces; the editor's catalog (the admin
// endpoint behind the pickers) lists the new kinds' entities, kinds and actions.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import mqtt from 'mqtt';
import { waitFor } from '../helpers/wait.js';
import { bridgeDef, collect, helper, load, nextMessage, node, useDemoHome, waitForStatus } from './support.js';

const demo = useDemoHome();
const vacuum = () => demo.home.hearth.bridge.cache.get('robot_vacuum.vacuum')?.value;

type Catalog = {
  entities: Array<{ id: string; kind: string; tool?: string; actions?: string[] }>;
  kinds: string[];
  tools: Array<{ name: string; parameters: { properties?: Record<string, { enum?: string[] }> } }>;
};

/** The deployed bridge's catalog once its own Hearth has discovered the tracker, the update and the doorbell (retained configs, read after connecting). */
async function discovered(): Promise<Catalog> {
  let last: Catalog | undefined;
  await waitFor(
    'the bridge discovers the tracker and the update',
    async () => {
      const r = await helper.request().get('/hearth/bridges/bridge/catalog');
      last = r.body as Catalog;
      return r.status === 200 && ['anna.anna', 'router_firmware.router_firmware', 'doorbell.doorbell'].every((id) => last!.entities?.some((e) => e.id === id));
    },
    20_000,
  ).catch((err: Error) => {
    throw new Error(`${err.message}; the catalog has ${JSON.stringify(last?.entities?.map((e) => e.id))}`);
  });
  return last!;
}

function flow() {
  return [
    bridgeDef(demo.home),
    {
      id: 'vac-start',
      type: 'hearth-device',
      z: 'f1',
      bridge: 'bridge',
      version: 1,
      mode: 'call',
      tool: 'robot_vacuum',
      args: '{"action":"start"}',
      roles: 'owner',
      wires: [['out']],
    },
    // A word in msg.payload that is one of the tool's actions is the action.
    {
      id: 'vac-word',
      type: 'hearth-device',
      z: 'f1',
      bridge: 'bridge',
      version: 1,
      mode: 'call',
      tool: 'robot_vacuum',
      args: '{}',
      roles: 'owner',
      wires: [['out']],
    },
    { id: 'out', type: 'helper', z: 'f1' },
    { id: 'vac-state', type: 'hearth-state', z: 'f1', bridge: 'bridge', entity: 'robot_vacuum.vacuum', kind: 'vacuum', wires: [['changes']] },
    { id: 'changes', type: 'helper', z: 'f1' },
    { id: 'bell', type: 'hearth-state', z: 'f1', bridge: 'bridge', kind: 'event', wires: [['rings']] },
    { id: 'rings', type: 'helper', z: 'f1' },
    {
      id: 'anna-home',
      type: 'hearth-current-state',
      z: 'f1',
      bridge: 'bridge',
      entity: 'anna.anna',
      op: 'is',
      value: 'home',
      wires: [['yes'], ['no']],
    },
    {
      id: 'fw-old',
      type: 'hearth-current-state',
      z: 'f1',
      bridge: 'bridge',
      entity: 'router_firmware.router_firmware',
      op: 'is_not',
      value: '1.1.0',
      wires: [['yes'], ['no']],
    },
    { id: 'yes', type: 'helper', z: 'f1' },
    { id: 'no', type: 'helper', z: 'f1' },
    { id: 'catcher', type: 'catch', z: 'f1', scope: null, uncaught: false, wires: [['caught']] },
    { id: 'caught', type: 'helper', z: 'f1' },
  ];
}

describe('Node-RED nodes and the new kinds', () => {
  before(async () => {
    const device = await mqtt.connectAsync(demo.broker.url, { protocolVersion: 4 });
    const publish = (topic: string, payload: unknown) =>
      device.publishAsync(topic, typeof payload === 'string' ? payload : JSON.stringify(payload), { retain: true, qos: 1 });
    await publish('homeassistant/device_tracker/anna/config', { name: 'Anna', unique_id: 'anna_phone', state_topic: 'k/anna' });
    await publish('homeassistant/update/router/config', {
      name: 'Router firmware',
      unique_id: 'router_fw',
      state_topic: 'k/fw/state',
      command_topic: 'k/fw/install',
      payload_install: 'install',
    });
    await publish('homeassistant/event/doorbell/config', {
      name: 'Doorbell',
      unique_id: 'doorbell',
      state_topic: 'k/doorbell',
      event_types: ['press', 'long_press'],
    });
    await publish('k/anna', 'home');
    await publish('k/fw/state', { installed_version: '1.0.4', latest_version: '1.1.0' });
    await device.endAsync();
    await waitFor('the tracker and the update in the test home', () =>
      ['anna.anna', 'router_firmware.router_firmware'].every((id) => demo.home.hearth.bridge.cache.get(id)?.value !== undefined),
    );
  });

  it('hearth-device starts the vacuum and sends it home, each confirmed in msg and audited as the node; hearth-state emits each activity', async () => {
    await load(flow());
    await waitForStatus('vac-start', (s) => /connected/.test(s.text ?? ''));
    assert.equal(vacuum(), 'docked');
    const changes = collect('changes');
    let out = nextMessage('out', 20_000);
    node('vac-start').receive({ payload: Date.now() });
    let msg = await out;
    assert.equal(msg.payload.outcome, 'confirmed', msg.text);
    assert.equal(msg.payload.entity, 'robot_vacuum.vacuum');
    assert.equal(msg.payload.state.value, 'cleaning');
    let row = demo.home.hearth.audit.get(msg.payload.auditId)!;
    assert.deepEqual([row.principal, row.action, row.outcome], ['flow:vac-start', 'start', 'confirmed']);

    out = nextMessage('out', 20_000);
    node('vac-word').receive({ payload: 'return_to_base' });
    msg = await out;
    assert.equal(msg.payload.outcome, 'confirmed', msg.text);
    assert.match(String(msg.payload.state.value), /^(returning|docked)$/);
    row = demo.home.hearth.audit.get(msg.payload.auditId)!;
    assert.deepEqual([row.principal, row.action, row.outcome], ['flow:vac-word', 'return_to_base', 'confirmed']);

    // The state node saw cleaning, then returning, then docked, with the old state each time.
    await waitFor('docked again', () => changes.some((m) => m.payload === 'docked'), 20_000);
    const seen = changes.map((m) => m.payload);
    assert.deepEqual(
      seen.filter((v, i) => v !== seen[i - 1]),
      ['cleaning', 'returning', 'docked'],
    );
    assert.equal(changes[0]!.topic, 'robot_vacuum.vacuum');
    assert.equal(changes[0]!.data.old_state.value, 'docked');
    assert.equal(typeof changes[0]!.data.new_state.attributes.battery_level, 'number');
  });

  it('hearth-state fires on every doorbell press, the same event type twice too', async () => {
    await load(flow());
    await waitForStatus('bell', (s) => /connected/.test(s.text ?? ''));
    await discovered();
    const rings = collect('rings');
    const device = await mqtt.connectAsync(demo.broker.url, { protocolVersion: 4 });
    try {
      // Events are not retained (Home Assistant's event platform): each is one occurrence.
      for (const type of ['press', 'press', 'long_press']) {
        const before = rings.length;
        await device.publishAsync('k/doorbell', JSON.stringify({ event_type: type }), { qos: 1 });
        await waitFor(`the ${type} fires`, () => rings.length > before, 10_000);
      }
    } finally {
      await device.endAsync();
    }
    assert.deepEqual(
      rings.map((m) => m.payload),
      ['press', 'press', 'long_press'],
    );
    assert.equal(rings[1]!.data.old_state.value, 'press');
  });

  it('hearth-current-state reads a presence tracker and a firmware update', async () => {
    await load(flow());
    await waitForStatus('anna-home', (s) => /connected/.test(s.text ?? ''));
    await discovered();
    const caught = collect('caught');
    const yes = collect('yes');
    const no = collect('no');
    /** Ask `id` until output 1 answers: a state arrives a moment after its entity is discovered (its retained report). */
    const ask = async (id: string) => {
      const before = yes.length;
      await waitFor(
        `${id} holds`,
        async () => {
          node(id).receive({});
          await new Promise((r) => setTimeout(r, 100));
          return yes.length > before;
        },
        20_000,
      ).catch((err: Error) => {
        throw new Error(`${err.message}; out of 2: ${JSON.stringify(no.map((m) => m.payload))}; errors: ${JSON.stringify(caught.map((m) => m.error))}`);
      });
      return yes[yes.length - 1]!;
    };
    let msg = await ask('anna-home');
    assert.equal(msg.payload, 'home');
    assert.equal(msg.data.id, 'anna.anna');
    // The update: installed 1.0.4, latest 1.1.0 in its attributes; "is not 1.1.0" holds.
    msg = await ask('fw-old');
    assert.equal(msg.payload, '1.0.4');
    assert.equal(msg.data.attributes.latest_version, '1.1.0');
    assert.deepEqual(caught, []);
  });

  it("the editor's catalog lists the new kinds' entities, kinds and actions", async () => {
    await load(flow());
    await waitForStatus('vac-start', (s) => /connected/.test(s.text ?? ''));
    const catalog = await discovered();
    const kindOf = (id: string) => catalog.entities.find((e) => e.id === id)?.kind;
    assert.equal(kindOf('robot_vacuum.vacuum'), 'vacuum');
    assert.equal(kindOf('siren.siren'), 'siren');
    assert.equal(kindOf('anna.anna'), 'device_tracker');
    assert.equal(kindOf('router_firmware.router_firmware'), 'update');
    for (const k of ['vacuum', 'siren', 'device_tracker', 'update']) assert.ok(catalog.kinds.includes(k), `kind ${k} in ${catalog.kinds}`);
    const actions = (tool: string) => catalog.tools.find((t) => t.name === tool)?.parameters.properties?.action?.enum;
    assert.deepEqual(actions('robot_vacuum'), ['start', 'pause', 'stop', 'return_to_base', 'locate', 'clean_spot', 'set_fan_speed']);
    assert.deepEqual(actions('siren'), ['turn_on', 'turn_off']);
    assert.deepEqual(actions('router_firmware'), ['install']);
    assert.deepEqual(actions('anna'), undefined, 'a presence tracker is read, not called');
    // Each entity says its tool and the actions it offers (a grouped tool's schema does not say which entity offers which).
    const vac = catalog.entities.find((e) => e.id === 'robot_vacuum.vacuum')!;
    assert.equal(vac.tool, 'robot_vacuum');
    assert.deepEqual(vac.actions, ['start', 'pause', 'stop', 'return_to_base', 'locate', 'clean_spot', 'set_fan_speed']);
    assert.deepEqual(catalog.entities.find((e) => e.id === 'router_firmware.router_firmware')!.actions, ['install']);
    const anna = catalog.entities.find((e) => e.id === 'anna.anna')!;
    assert.equal(anna.tool, undefined);
    assert.equal(anna.actions, undefined);
  });
});
