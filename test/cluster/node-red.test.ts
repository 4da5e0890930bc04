// Hearth's Node-RED nodes on each clustered broker (#34), in a real Node-RED runtime (the test helper's): a
// hearth-bridge whose broker field names the cluster's nodes, comma-separated, beginning with another node than
// the device's, and a config file asking MQTT 5 (the cluster speaks 3.1.1: the bridge falls back). The porch
// light announces itself by retained Home Assistant discovery on node 0 (the bridge starts on node 1); a
// hearth-device call crosses the cluster to it and is confirmed on its echo; hearth-state sees the change and the
// light's last will; hearth-audit sees the row. A broker field with a malformed node makes the bridge and its
// nodes say which node, in the form's words.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import vm from 'node:vm';
import { after, afterEach, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import mqtt, { type MqttClient } from 'mqtt';
import { DEMO_DEVICES } from '../../src/bridge.js';
import type { Hearth } from '../../src/hearth.js';
import { startSimulator, type Simulator } from '../../src/simulator/simulator.js';
import { clusterKinds, hearthUrl } from '../helpers/cluster-brokers.js';
import { ROOT } from '../helpers/cli.js';
import { porchLight, type DiscoveredLight } from '../helpers/discovered-light.js';
import { logSink } from '../helpers/log-sink.js';
import { startNatsCluster, type TestCluster } from '../helpers/nats-cluster.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { load, type Msg, nextMessage, node, unload, waitForStatus } from '../nodes/support.js';

/** A flow on a bridge to `broker` (its config file next to the database in `dir`). */
function flow(broker: string, dir: string) {
  return [
    {
      id: 'bridge',
      type: 'hearth-bridge',
      version: 1,
      mode: 'embedded',
      name: 'cluster',
      broker,
      embedded: false,
      demo: 'false',
      devices: '',
      configFile: join(dir, 'hearth.yaml'),
      database: join(dir, 'hearth.db'),
      engine: 'builtin',
      provider: 'intent',
      logLevel: 'error',
    },
    // The tool comes in msg.tool: its name is the discovered light's, known once discovered.
    { id: 'dev', type: 'hearth-device', z: 'f1', bridge: 'bridge', version: 1, mode: 'call', roles: 'owner', wires: [['out']] },
    { id: 'out', type: 'helper', z: 'f1' },
    { id: 'st', type: 'hearth-state', z: 'f1', bridge: 'bridge', entity: '*porch*', ignoreUnavailable: false, wires: [['changes']] },
    { id: 'changes', type: 'helper', z: 'f1' },
    { id: 'au', type: 'hearth-audit', z: 'f1', bridge: 'bridge', outcomes: '', principal: 'flow:*', wires: [['rows']] },
    { id: 'rows', type: 'helper', z: 'f1' },
  ];
}

async function bridgeHearth(): Promise<Hearth> {
  return (await node('bridge').controller.ready()) as Hearth;
}

for (const { kind, start } of clusterKinds) {
  describe(`Node-RED on a ${kind} cluster`, () => {
    let broker: TestCluster;
    let light: DiscoveredLight;
    let dir: string;

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'hearth-nr-cluster-'));
      // MQTT 5 asked for; the cluster has 3.1.1 only. Quick reconnects, so a dead node is left soon.
      writeFileSync(join(dir, 'hearth.yaml'), 'mqtt:\n  protocol_version: 5\n  reconnect_min_ms: 100\n  reconnect_max_ms: 300\n');
      broker = await start();
      light = await porchLight(broker.url);
    });
    after(async () => {
      await unload();
      await light?.client.endAsync(true).catch(() => undefined);
      await broker?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it('discovers the light, commands it across the cluster with a confirmed outcome, sees the state, the last will and the audit row', async () => {
      const url = hearthUrl(broker);
      if (broker.nodes.length > 1) assert.equal(url.split(',').length, broker.nodes.length, 'the broker field names every node');
      await load(flow(url, dir));
      await waitForStatus('dev', (s) => /connected/.test(s.text ?? ''), 60_000);
      const hearth = await bridgeHearth();
      const connection = hearth.bridge.connection;
      assert.equal(connection.protocolVersion, 4, 'MQTT 5 fell back to 3.1.1');
      if (broker.nodes.length > 1) {
        assert.notEqual(connection.node, `127.0.0.1:${broker.nodes[0]!.mqttPort}`, 'the bridge is on another node than the light');
      }

      const entity = await waitFor(
        'the porch light discovered',
        () => hearth.bridge.registry.entities().find((e) => e.commandTopic === light.commandTopic),
        20_000,
      );
      await waitFor('its retained state', () => hearth.bridge.cache.get(entity.id)?.value === 'off', 20_000);
      assert.equal(hearth.bridge.cache.get(entity.id)?.available, true);
      const tool = hearth.tools.all().find((t) => t.capability === 'actuator' && t.meta.entityIds.includes(entity.id));
      assert.ok(tool, 'the light has a tool');
      hearth.policy.add({ subject: 'role:owner', targetType: 'any', target: '*', action: 'actuate', effect: 'allow', note: 'test: owners act' });

      const turnedOn = nextMessage('changes', 20_000, (m) => m.topic === entity.id && m.payload === 'on');
      const row = nextMessage('rows', 20_000, (m) => m.payload.principal === 'flow:dev');
      const out = nextMessage('out', 30_000);
      node('dev').receive({ tool: tool.name, payload: { action: 'turn_on' } });
      const msg = await out;
      assert.equal(msg.payload.outcome, 'confirmed', msg.text);
      assert.equal(msg.payload.entity, entity.id);
      assert.equal(msg.payload.state.value, 'on');
      assert.deepEqual(light.commands, ['ON'], 'the light got the command once');
      const change = await turnedOn;
      assert.equal(change.data.old_state.value, 'off');
      const seen = await row;
      assert.equal(seen.payload.id, msg.payload.auditId);
      assert.equal(seen.payload.outcome, 'confirmed');

      // The row is in the bridge's database file, once.
      const db = new Database(join(dir, 'hearth.db'), { readonly: true });
      try {
        const rows = db.prepare("SELECT id, outcome FROM audit WHERE principal = 'flow:dev'").all() as Array<{ id: number; outcome: string }>;
        assert.deepEqual(rows, [{ id: msg.payload.auditId, outcome: 'confirmed' }]);
      } finally {
        db.close();
      }
      assert.equal(hearth.audit.verify().ok, true);

      // The light's connection dies: its last will, retained, crosses the cluster to the flow.
      const gone = nextMessage('changes', 30_000, (m) => m.topic === entity.id && m.data.new_state.available === false);
      (light.client.stream as unknown as Socket).destroy();
      await gone;
      node('dev').receive({ tool: tool.name, payload: { action: 'turn_off' } });
      await waitForStatus('dev', (s) => /offline/.test(s.text ?? ''), 20_000);
      assert.deepEqual(light.commands, ['ON'], 'nothing sent to an offline light');
    });
  });
}

// The node the bridge is connected to dies while a flow issues calls at a steady rate. The demo simulator's devices
// are on node 0, the bridge starts on node 1 (which dies). Every call the flow makes reaches the flow again (its
// output, or a Catch node), names its one audit row, and its outcome is honest: `not_sent` never reached the
// light, none `failed`, none published twice (each call asks a brightness no other asks, so a witness can tell).
describe('Node-RED on a NATS cluster whose node under the bridge dies', () => {
  const CALLS = 40;
  const KILL_AT = 15;
  /** The steady rate: one call every this many ms (a load pattern, nothing is timed). */
  const EVERY_MS = 60;
  let broker: TestCluster;
  let dir: string;
  let sim: Simulator | undefined;
  let witness: MqttClient | undefined;
  const seen: string[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hearth-nr-failover-'));
    const devices = join(dir, 'devices');
    mkdirSync(devices);
    for (const f of readdirSync(DEMO_DEVICES)) {
      writeFileSync(join(devices, f), readFileSync(join(DEMO_DEVICES, f), 'utf8').replace(/travel_ms: \d+/g, 'travel_ms: 50'));
    }
    // Calls while the bridge has no node wait up to 5 s for another (as a cluster's Hearth would be set).
    writeFileSync(join(dir, 'hearth.yaml'), 'mqtt:\n  reconnect_min_ms: 100\n  reconnect_max_ms: 300\n  send_wait_ms: 5000\ntools:\n  shape: per-entity\n');
    broker = await startNatsCluster();
    // The witness of what reached the devices: on node 0 with them, at QoS 0 (core NATS, no JetStream to hold it up).
    witness = await mqtt.connectAsync(broker.url, { protocolVersion: 4, reconnectPeriod: 100 });
    witness.on('message', (_t, payload) => seen.push(payload.toString()));
    await witness.subscribeAsync('hearth-demo/kitchen_light/set', { qos: 0 });
  });
  after(async () => {
    await unload();
    await sim?.close().catch(() => undefined);
    await witness?.endAsync(true).catch(() => undefined);
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('every call the flow makes comes back to it with its one audit row and an honest outcome', async (t) => {
    await load([
      { ...flow(broker.nodeList(1), dir)[0]!, devices: join(dir, 'devices') },
      { id: 'dev', type: 'hearth-device', z: 'f1', bridge: 'bridge', version: 1, mode: 'call', tool: 'kitchen_light', roles: 'owner', wires: [['out']] },
      { id: 'out', type: 'helper', z: 'f1' },
      { id: 'catcher', type: 'catch', z: 'f1', scope: ['dev'], uncaught: false, wires: [['caught']] },
      { id: 'caught', type: 'helper', z: 'f1' },
    ]);
    await waitForStatus('dev', (s) => /connected/.test(s.text ?? ''), 60_000);
    const hearth = await bridgeHearth();
    hearth.policy.add({ subject: 'role:owner', targetType: 'any', target: '*', action: 'actuate', effect: 'allow', note: 'test: owners act' });
    // The devices as docs/deployment.md tells users to set them on a cluster: command subscriptions at QoS 0.
    sim = await startSimulator({
      url: broker.url,
      devices: hearth.bridge.registry.devices(),
      log: logSink('error').log,
      connectTimeoutMs: 60_000,
      commandQos: 0,
    });
    await waitFor('the kitchen light reports', () => hearth.bridge.cache.get('kitchen_light.light')?.value !== undefined, 20_000);
    const connection = hearth.bridge.connection;
    const killed = broker.nodeIndexOfPort(Number(connection.node!.split(':')[1]));
    assert.equal(killed, 1, 'the bridge starts on node 1');

    const back: Msg[] = [];
    node('out').on('input', (m: Msg) => back.push(m));
    node('caught').on('input', (m: Msg) => back.push(m));
    for (let i = 1; i <= CALLS; i++) {
      node('dev').receive({ brightness: i, payload: { action: 'turn_on', brightness: i } });
      if (i === KILL_AT) await broker.killNode(killed);
      await sleep(EVERY_MS);
    }
    await waitFor(`all ${CALLS} calls back in the flow`, () => back.length >= CALLS, 90_000);
    await waitFor('the bridge on a live node', () => connection.connected && connection.node, 30_000);
    assert.notEqual(broker.nodeIndexOfPort(Number(connection.node!.split(':')[1])), killed, 'moved to another node');

    // Served again: the first confirmed call after the death (JetStream elects new stream leaders meanwhile).
    // Bounded by time, not by a count of calls: on a busy machine the election can outlast 30 calls.
    let served = 0;
    const giveUp = Date.now() + 120_000;
    for (let brightness = 200; brightness < 255 && !served && Date.now() < giveUp; brightness++) {
      await waitFor('the bridge connected', () => connection.connected, 30_000);
      // NATS drops a device whose QoS 1 state report timed out: it is offline (its will) until it is back, and a
      // call meanwhile is not_sent. Wait for that, within the same bound, rather than spend the calls.
      while (hearth.bridge.cache.get('kitchen_light.light')?.available === false && Date.now() < giveUp) await sleep(50);
      const had = back.length;
      node('dev').receive({ brightness, payload: { action: 'turn_on', brightness } });
      await waitFor(`call ${brightness} back in the flow`, () => back.length > had, 30_000);
      const m = back[back.length - 1]!;
      if (m.payload?.outcome === 'confirmed') served = brightness;
      else await sleep(200);
    }
    assert.ok(served, 'a call from the flow is confirmed again after the failover');

    await sleep(500);
    const sent = new Map<number, number>();
    for (const payload of seen) {
      const b = (JSON.parse(payload) as { brightness?: number }).brightness;
      if (typeof b === 'number') sent.set(b, (sent.get(b) ?? 0) + 1);
    }
    for (const [b, n] of sent) assert.equal(n, 1, `brightness ${b} published ${n} times`);

    const outcomes: Record<string, number> = {};
    const byBrightness = new Map<number, Msg[]>();
    for (const m of back) byBrightness.set(m.brightness, [...(byBrightness.get(m.brightness) ?? []), m]);
    for (const [brightness, msgs] of byBrightness) {
      assert.equal(msgs.length, 1, `call ${brightness} came back to the flow once`);
      const summary = msgs[0]!.payload as { outcome: string; auditId: number | null };
      assert.equal(typeof summary.auditId, 'number', `call ${brightness} names its row: ${JSON.stringify(msgs[0]!.text ?? msgs[0]!.error)}`);
      const row = hearth.audit.get(summary.auditId!)!;
      assert.equal(row.principal, 'flow:dev');
      assert.equal(row.args.brightness, brightness, `call ${brightness}: its own row`);
      // The flow saw the outcome the row had; a late confirmation may have been appended since.
      assert.ok(
        summary.outcome === row.outcome || (summary.outcome === 'unconfirmed' && row.outcome === 'confirmed'),
        `call ${brightness}: ${summary.outcome} / ${row.outcome}`,
      );
      outcomes[row.outcome] = (outcomes[row.outcome] ?? 0) + 1;
      assert.notEqual(row.outcome, 'pending', `call ${brightness} has an outcome`);
      assert.notEqual(row.outcome, 'failed', `call ${brightness}: nothing failed`);
      if (row.outcome === 'not_sent') assert.equal(sent.has(brightness), false, `call ${brightness} is not_sent but reached the light`);
      if (row.outcome === 'confirmed') assert.equal(sent.get(brightness), 1, `call ${brightness} confirmed, published once`);
    }
    assert.equal(byBrightness.size, back.length, 'no call came back twice');
    t.diagnostic(`outcomes ${JSON.stringify(outcomes)}`);
    const rows = hearth.audit.list({ entityId: 'kitchen_light.light', limit: 1000 }).filter((r) => r.principal === 'flow:dev');
    assert.equal(rows.length, byBrightness.size, 'exactly one row per call');
    assert.ok(outcomes.confirmed! > KILL_AT / 2, `calls before the death confirmed: ${JSON.stringify(outcomes)}`);
    assert.equal(sim.state('kitchen_light.light').brightness, served, 'the light has the last confirmed brightness');
    assert.equal(hearth.audit.verify().ok, true, 'the audit verifies');
  });
});

describe('Node-RED bridge with a malformed broker list', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'hearth-nr-bad-'));
    writeFileSync(join(dir, 'hearth.yaml'), 'mqtt:\n  protocol_version: 4\n');
  });
  afterEach(async () => {
    await unload();
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  for (const [broker, says] of [
    ['mqtt://127.0.0.1:1883,nats://127.0.0.1:4222', /node 2 of 2 \("nats:\/\/127\.0\.0\.1:4222"\) must begin mqtt:\/\//],
    ['mqtt://127.0.0.1:1883,mqtt://[::1', /node 2 of 2 \("mqtt:\/\/\[::1"\) is not a URL/],
    ['mqtt://127.0.0.1:1883,,mqtt://127.0.0.1:1884', /node 2 of 3 is empty/],
  ] as const) {
    it(`${broker}: the bridge and its nodes name the field and the node`, async () => {
      await load(flow(broker, dir));
      // The status (cut at 60 characters) begins with the field and the node; the error has the whole of it.
      const status = await waitForStatus('dev', (s) => /^error/.test(s.text ?? ''), 20_000);
      assert.match(status.text!, /^error: Broker URL \(broker\): node 2 of/);
      await assert.rejects(node('bridge').controller.ready(), (err: Error) => /Broker URL \(broker\): /.test(err.message) && says.test(err.message));
    });
  }

  it("the editor's broker field takes a cluster's nodes and names a malformed one", () => {
    const sandbox = { window: {} as { hearthEditor?: { brokerUrls(v: string): true | string } } };
    vm.runInNewContext(readFileSync(join(ROOT, 'resources', 'hearth-editor.js'), 'utf8'), sandbox);
    const check = sandbox.window.hearthEditor!.brokerUrls;
    for (const ok of ['mqtt://127.0.0.1:1883', 'mqtt://a:1883,mqtt://b:1883, mqtt://c:1883', 'mqtts://user:pw@[::1]:8883', 'wss://h/mqtt']) {
      assert.equal(check(ok), true, ok);
    }
    assert.match(String(check('mqtt://a:1883,nats://b:4222')), /^node 2 of 2 \(nats:\/\/b:4222\) is not an mqtt:\/\//);
    assert.match(String(check('mqtt://a:1883,')), /^node 2 of 2 is empty/);
    assert.match(String(check('mqtt://a:port')), /^the URL \(mqtt:\/\/a:port\) is not/);
  });
});
