// The node a Node-RED bridge is connected to dies while a flow issues calls (#34, #44), in a real Node-RED runtime
// on a 3-node NATS cluster. A file of its own, so it has the runner's time bound to itself.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { DEMO_DEVICES } from '../../src/bridge.js';
import { startSimulator, type Simulator } from '../../src/simulator/simulator.js';
import { logSink } from '../helpers/log-sink.js';
import { startNatsCluster, type TestCluster } from '../helpers/nats-cluster.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { load, type Msg, node, unload, waitForStatus } from '../nodes/support.js';
import { bridgeHearth, flow } from './node-red-flow.js';
import { Phases } from '../helpers/phases.js';

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
  // Where the test got to, said when it did not finish (a time-out says nothing of where it was).
  const phases = new Phases(`Node-RED failover`);
  const phase = (what: string) => phases.phase(what);

  before(async () => {
    phase('starting the cluster');
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
    phases.reportIfUnfinished();
    await unload();
    await sim?.close().catch(() => undefined);
    await witness?.endAsync(true).catch(() => undefined);
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('every call the flow makes comes back to it with its one audit row and an honest outcome', async (t) => {
    phase('loading the flow');
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

    phase('calls');
    const back: Msg[] = [];
    node('out').on('input', (m: Msg) => back.push(m));
    node('caught').on('input', (m: Msg) => back.push(m));
    for (let i = 1; i <= CALLS; i++) {
      node('dev').receive({ brightness: i, payload: { action: 'turn_on', brightness: i } });
      if (i === KILL_AT) await broker.killNode(killed);
      // Before the death each call is answered before the next (on a busy machine a fixed pace queued them behind
      // one another, and the queue died with the node: "not sent"); from the death on, a steady stream.
      if (i < KILL_AT) await waitFor(`call ${i} back in the flow`, () => back.length >= i, 30_000);
      else await sleep(EVERY_MS);
    }
    await waitFor(`all ${CALLS} calls back in the flow`, () => back.length >= CALLS, 90_000);
    phase('every call back');
    await waitFor('the bridge on a live node', () => connection.connected && connection.node, 30_000);
    assert.notEqual(broker.nodeIndexOfPort(Number(connection.node!.split(':')[1])), killed, 'moved to another node');

    // Served again: the first confirmed call after the death (JetStream elects new stream leaders meanwhile).
    // Bounded by time, not by a count of calls: on a busy machine the election can outlast 30 calls.
    phase('served again?');
    let served = 0;
    // What each of these calls was answered (said if none is confirmed).
    const tried: string[] = [];
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
      tried.push(`${phases.seconds()} s ${brightness}: ${String(m.text ?? m.error?.message ?? m.payload?.outcome).slice(0, 160)}`);
      if (m.payload?.outcome === 'confirmed') served = brightness;
      else await sleep(200);
    }
    assert.ok(served, `a call from the flow is confirmed again after the failover; tried:\n${tried.join('\n')}`);
    phase('served again');

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
    phase('done');
    // Where the time went (phase by phase), for a run that comes near its bound on a busy machine.
    t.diagnostic(phases.done());
  });
});
