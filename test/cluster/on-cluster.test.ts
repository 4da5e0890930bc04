// A whole Hearth on each clustered broker (#34), with Hearth given every node and connected to another node than
// the devices: Home Assistant discovery (retained configs, and the birth message), state, commands with their
// echo, availability by last will, and MQTT 5 falling back to 3.1.1 with one warning.
// (The simulator and a broker restart under Hearth run on these brokers in test/simulator and test/faults.)
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { MqttClient } from 'mqtt';
import type { Entity } from '../../src/devices/model.js';
import type { Hearth } from '../../src/hearth.js';
import { clusterKinds } from '../helpers/cluster-brokers.js';
import { porchLight } from '../helpers/discovered-light.js';
import { logSink } from '../helpers/log-sink.js';
import type { TestCluster } from '../helpers/nats-cluster.js';
import { OWNER, openHearth, startHome, type TestHome } from '../helpers/home.js';
import { waitFor } from '../helpers/wait.js';

const porch = (hearth: Hearth): Entity | undefined => hearth.bridge.registry.entities().find((e) => e.commandTopic === 'cluster/porch/set');

for (const { kind, start } of clusterKinds) {
  describe(`Hearth on a ${kind} cluster`, () => {
    let broker: TestCluster;
    let light: MqttClient;
    let home: TestHome;

    before(async () => {
      broker = await start();
      light = (await porchLight(broker.url)).client;
      home = await startHome(broker, { travelMs: 50 });
    });
    after(async () => {
      await home?.close();
      await light?.endAsync(true).catch(() => undefined);
      await broker?.stop();
    });

    it('is on another node than the devices, and finds the discovered light with its state', async () => {
      const connection = home.hearth.bridge.connection;
      if (broker.nodes.length > 1) assert.notEqual(connection.node, `127.0.0.1:${broker.nodes[0]!.mqttPort}`, 'Hearth starts on node 1');
      const entity = await waitFor('the porch light discovered', () => porch(home.hearth), 10_000);
      await waitFor('its state', () => home.hearth.bridge.cache.get(entity.id)?.value === 'off', 10_000);
      assert.equal(home.hearth.bridge.cache.get(entity.id)?.available, true);
    });

    it('commands devices on another node and says confirmed only on their echo', async () => {
      const entity = porch(home.hearth)!;
      const tool = home.hearth.tools.all().find((t) => t.capability === 'actuator' && t.meta.entityIds.includes(entity.id))!;
      const on = await home.hearth.tools.call(tool.name, { action: 'turn_on' }, OWNER);
      assert.match(on.text!, /^confirmed/);
      const lamp = await home.hearth.tools.call('living_room_lamp', { action: 'turn_on' }, OWNER);
      assert.match(lamp.text!, /^confirmed/);
      assert.equal(home.sim.state('living_room_lamp.lamp').value, 'on');
      const rows = home.hearth.audit.list({ limit: 10 });
      assert.deepEqual(
        rows.map((r) => r.outcome),
        ['confirmed', 'confirmed'],
      );
      assert.equal(home.hearth.audit.verify().ok, true);
    });

    it('sees a device go offline by its last will, and then sends it nothing', async () => {
      const entity = porch(home.hearth)!;
      (light.stream as unknown as Socket).destroy();
      await waitFor('the porch light offline', () => home.hearth.bridge.cache.get(entity.id)?.available === false, 15_000);
      const sent = home.commands().length;
      const tool = home.hearth.tools.all().find((t) => t.capability === 'actuator' && t.meta.entityIds.includes(entity.id))!;
      const off = await home.hearth.tools.call(tool.name, { action: 'turn_off' }, OWNER);
      assert.match(off.text!, /offline/);
      assert.equal(home.commands().length, sent, 'nothing published');
    });

    it('falls back from MQTT 5 to 3.1.1, saying so once', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'hearth-v5-'));
      const logs = logSink('debug');
      let second: Hearth | undefined;
      try {
        second = await openHearth(broker.nodeList(), dir, logs.log, { 'mqtt.protocolVersion': '5', 'mqtt.reconnectMaxMs': '300' });
        await waitFor('connected over 3.1.1', () => second!.bridge.connection.connected, 15_000);
        assert.equal(second.bridge.connection.protocolVersion, 4);
        assert.equal(logs.find(/speaks MQTT 3\.1\.1 only/).length, 1);
      } finally {
        await second?.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}
