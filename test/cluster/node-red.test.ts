// Hearth's Node-RED nodes on each clustered broker (#34), in a real Node-RED runtime (the test helper's): a
// hearth-bridge whose broker field names the cluster's nodes, comma-separated, beginning with another node than
// the device's, and a config file asking MQTT 5 (the cluster speaks 3.1.1: the bridge falls back). The porch
// light announces itself by retained Home Assistant discovery on node 0 (the bridge starts on node 1); a
// hearth-device call crosses the cluster to it and is confirmed on its echo; hearth-state sees the change and the
// light's last will; hearth-audit sees the row. A broker field with a malformed node makes the bridge and its
// nodes say which node, in the form's words. (The bridge's node dying under a flow: node-red-failover.test.ts.)
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import vm from 'node:vm';
import { after, afterEach, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { clusterKinds, hearthUrl } from '../helpers/cluster-brokers.js';
import { ROOT } from '../helpers/cli.js';
import { porchLight, type DiscoveredLight } from '../helpers/discovered-light.js';
import type { TestCluster } from '../helpers/nats-cluster.js';
import { waitFor } from '../helpers/wait.js';
import { load, nextMessage, node, unload, waitForStatus } from '../nodes/support.js';
import { bridgeHearth, flow } from './node-red-flow.js';

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
