// Two sites on one shared cluster (#34): each site's topics under its own prefix, each site's Hearth and devices
// with their own broker credentials, and the broker's ACL lets a credential publish and subscribe only under its
// site's prefix (docs/deployment.md shows the same ACL for each broker). Site A's Hearth, even given a device file
// for site B's lock, cannot command it: the broker drops the command, site B's lock never hears it, and site A's
// audit says only what it knows (unconfirmed, never confirmed). Site B's own Hearth commands it as usual.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { loadDeviceFiles } from '../../src/devices/loader.js';
import type { Hearth } from '../../src/hearth.js';
import { startSimulator, type Simulator } from '../../src/simulator/simulator.js';
import { clusterKinds } from '../helpers/cluster-brokers.js';
import { OWNER, openHearth } from '../helpers/home.js';
import { logSink } from '../helpers/log-sink.js';
import type { BrokerUser, TestCluster } from '../helpers/nats-cluster.js';
import { startNatsCluster } from '../helpers/nats-cluster.js';
import { startRabbitMq } from '../helpers/rabbitmq.js';
import { waitFor } from '../helpers/wait.js';

const LOCK_FILE = `devices:
  - id: site_b_front_door
    name: Site B front door
    availability: site-b/front_door/availability
    entities:
      lock:
        kind: lock
        name: Site B front door lock
        state_topic: site-b/front_door/lock
        command_topic: site-b/front_door/lock/set
        confirm_timeout_ms: 1500
        simulate: { initial: locked, travel_ms: 50 }
`;

const password = (who: string) => `${who}-secret-${process.pid}`;
/** A site's credentials may use only the site's own topics: its devices', and its discovery prefixes under it. */
const siteUser = (username: string, site: string): BrokerUser => ({
  username,
  password: password(username),
  publish: [`${site}/#`],
  subscribe: [`${site}/#`],
});
const USERS = [siteUser('hearth-a', 'site-a'), siteUser('hearth-b', 'site-b'), siteUser('devices-b', 'site-b')];

/** Hearth's settings for one site: its credential and every discovery prefix under the site's topics. */
const siteSettings = (site: string, user: string, devices: string) => ({
  'mqtt.username': user,
  'mqtt.password': password(user),
  'devices.paths': [devices],
  'discovery.homeassistant.prefix': `${site}/homeassistant`,
  'discovery.zigbee2mqtt.prefix': `${site}/zigbee2mqtt`,
  'discovery.homie.prefix': `${site}/homie`,
  'mqtt.statusTopic': `${site}/hearth/status`,
});

const starters: Record<string, (users: BrokerUser[]) => Promise<TestCluster>> = {
  nats: (users) => startNatsCluster({ users }),
  rabbitmq: (users) => startRabbitMq({ users }),
};

for (const { kind } of clusterKinds) {
  describe(`two sites on one ${kind} cluster`, () => {
    let broker: TestCluster;
    let dir: string;
    let sim: Simulator;
    let witness: MqttClient;
    const heard: string[] = [];
    let siteA: Hearth;
    let logsA: ReturnType<typeof logSink>;
    let siteB: Hearth;

    before(async () => {
      broker = await starters[kind]!(USERS);
      dir = mkdtempSync(join(tmpdir(), 'hearth-sites-'));
      for (const site of ['a', 'b']) mkdirSync(join(dir, site, 'devices'), { recursive: true });
      // Site A's Hearth is given site B's lock too (a copied file, a mistake or worse); the ACL must hold anyway.
      writeFileSync(join(dir, 'a', 'devices', 'lock.yaml'), LOCK_FILE);
      writeFileSync(join(dir, 'b', 'devices', 'lock.yaml'), LOCK_FILE);
      const devicesB = `mqtt://devices-b:${password('devices-b')}@127.0.0.1:${broker.port}`;
      const logs = logSink('info');
      logsA = logSink('info');
      // A loaded RabbitMQ can take well over the simulator's default 10 s to take a device's connection.
      sim = await startSimulator({ url: devicesB, devices: loadDeviceFiles([join(dir, 'b', 'devices')]).devices, log: logs.log, connectTimeoutMs: 60_000 });
      witness = await mqtt.connectAsync(devicesB, { protocolVersion: 4, reconnectPeriod: 100 });
      witness.on('message', (topic, payload) => topic.endsWith('/set') && heard.push(`${topic} ${payload}`));
      // A wildcard at QoS 1 under the site's prefix: the ACL lets a site's credential have its whole tree.
      await witness.subscribeAsync('site-b/#', { qos: 1 });
      siteA = await openHearth(broker.nodeList(), join(dir, 'a'), logsA.log, siteSettings('site-a', 'hearth-a', join(dir, 'a', 'devices')));
      siteB = await openHearth(broker.nodeList(), join(dir, 'b'), logs.log.child({ site: 'b' }), siteSettings('site-b', 'hearth-b', join(dir, 'b', 'devices')));
    });
    after(async () => {
      await siteA?.close();
      await siteB?.close();
      await witness?.endAsync(true).catch(() => undefined);
      await sim?.close().catch(() => undefined);
      await broker?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it("site A's Hearth cannot command site B's lock; site B's can", async (t) => {
      // Site A's credential is good: the broker let it in. (RabbitMQ then closes the connection on its refused
      // subscription to site B's lock, and again on each reconnect; NATS refuses that subscription alone.)
      assert.ok(logsA.find(/^MQTT connected/).length >= 1, 'site A connected with its credential');
      await waitFor("site B's Hearth sees its lock", () => siteB.bridge.cache.get('site_b_front_door.lock')?.value === 'locked', 10_000);
      // Site A may not even read it.
      assert.equal(siteA.bridge.cache.get('site_b_front_door.lock')?.value, undefined, 'site A reads nothing of site B');

      const held = await siteA.tools.call('site_b_front_door_lock', { action: 'unlock' }, OWNER);
      if (/^needs approval/.test(held.text!)) siteA.approvals.grant((held.details as { approvalId: string }).approvalId, 'cli:test-person');
      const tried = await siteA.tools.call('site_b_front_door_lock', { action: 'unlock' }, OWNER);
      assert.doesNotMatch(tried.text!, /^confirmed/, tried.text);
      const row = siteA.audit.list({ entityId: 'site_b_front_door.lock' }).at(-1)!;
      assert.ok(['unconfirmed', 'not_sent'].includes(row.outcome), `site A's row says what it knows: ${row.outcome}`);
      t.diagnostic(`site A: ${row.outcome}: ${tried.text}`);
      assert.equal(sim.state('site_b_front_door.lock').value, 'locked', "site B's lock is still locked");

      // The same command from site B's own Hearth goes through (so the ACL, not a broken set-up, stopped A).
      const heldB = await siteB.tools.call('site_b_front_door_lock', { action: 'unlock' }, OWNER);
      if (/^needs approval/.test(heldB.text!)) siteB.approvals.grant((heldB.details as { approvalId: string }).approvalId, 'cli:test-person');
      const done = await siteB.tools.call('site_b_front_door_lock', { action: 'unlock' }, OWNER);
      assert.match(done.text!, /^confirmed: .*unlocked/);
      assert.deepEqual(heard, ['site-b/front_door/lock/set UNLOCK'], "site B's lock heard one command: site B's");
    });
  });
}
