// A whole Hearth on a real broker: the demo device files (copied, with quick
// travel times), the simulator, a real SQLite file, and a `#` watcher that
// sees every publish.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mqtt, { type MqttClient } from 'mqtt';
import { loadConfig } from '../../src/config/load.js';
import { Hearth } from '../../src/hearth.js';
import { startSimulator, type Simulator } from '../../src/simulator/simulator.js';
import type { GeneratedTool, Principal } from '../../src/tools/types.js';
import type { Logger } from '../../src/log.js';
import type { TestBroker } from './brokers.js';
import { hearthUrl, isCluster } from './cluster-brokers.js';
import { copyDemoDevices } from './demo-devices.js';
import { logSink } from './log-sink.js';
import { waitFor } from './wait.js';

/** The topic of the markers `caughtUp()` has Hearth publish (no device listens there). */
const CAUGHT_UP = 'hearth-test/caught-up';

export const OWNER: Principal = { id: 'cli:test-owner', roles: ['owner'] };

/** The actuator tool that acts on this entity (per-entity tools), or a failed assertion naming what there is. */
export function actuatorTool(hearth: Hearth, entityId: string): GeneratedTool {
  const tool = hearth.tools.all().find((t) => t.capability === 'actuator' && t.meta.entityIds.includes(entityId));
  if (!tool)
    throw new Error(
      `no actuator tool for ${entityId}; tools: ${hearth.tools
        .all()
        .map((t) => t.name)
        .join(', ')}`,
    );
  return tool;
}

export interface TestHome {
  hearth: Hearth;
  sim: Simulator;
  dir: string;
  /** Every message published on the broker after start (topic, payload), in order. */
  seen: Array<{ topic: string; payload: string }>;
  commands(): Array<{ topic: string; payload: string }>;
  /**
   * Resolves once everything Hearth published before the call has reached the watcher: a marker Hearth publishes
   * on its own connection arrives after it. For "nothing (more) was published", in place of a wait of some time.
   */
  caughtUp(): Promise<void>;
  logs: ReturnType<typeof logSink>;
  close(): Promise<void>;
}

type Flags = Record<string, string | string[] | boolean>;

/**
 * A Hearth on a test broker with a database in `dir`, no demo and no device
 * files unless `flags` say otherwise; owners may act unless told not to.
 */
export async function openHearth(brokerUrl: string, dir: string, log: Logger, flags: Flags = {}, ownerMayAct = true): Promise<Hearth> {
  const { config } = loadConfig({
    cwd: dir,
    env: {},
    flags: {
      'mqtt.url': brokerUrl,
      'mqtt.reconnectMinMs': '100',
      'devices.paths': [],
      demo: false,
      'database.path': join(dir, 'hearth.db'),
      'tools.shape': 'per-entity',
      ...flags,
    },
  });
  const hearth = await Hearth.open({ config, log, connectWaitMs: 5000 });
  if (ownerMayAct) hearth.policy.add({ subject: 'role:owner', targetType: 'any', target: '*', action: 'actuate', effect: 'allow', note: 'test: owners act' });
  return hearth;
}

export interface HomeOptions {
  shape?: 'per-entity' | 'grouped';
  /** Let owners act on everything (the usual test setup). */
  ownerMayAct?: boolean;
  travelMs?: number;
  extraSettings?: Record<string, string>;
}

export async function startHome(broker: TestBroker, options: HomeOptions = {}): Promise<TestHome> {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-home-'));
  const devices = copyDemoDevices(dir, (text) => text.replace(/travel_ms: \d+/g, `travel_ms: ${options.travelMs ?? 600}`));
  const logs = logSink('debug');
  // On a cluster Hearth is given every node beginning with node 1; the devices and the watcher are on node 0.
  const hearth = await openHearth(
    hearthUrl(broker),
    dir,
    logs.log,
    {
      'mqtt.protocolVersion': '4',
      'mqtt.reconnectMaxMs': '300',
      'devices.paths': [devices],
      'tools.shape': options.shape ?? 'per-entity',
      ...options.extraSettings,
    },
    options.ownerMayAct !== false,
  );
  // Bounded, but not by the simulator's default 10 s: a clustered broker on a busy machine can take longer.
  const sim = await startSimulator({
    url: broker.url,
    devices: hearth.bridge.registry.devices(),
    log: logs.log.child({ part: 'sim' }),
    connectTimeoutMs: 60_000,
    // On a cluster the devices are set up as docs/deployment.md tells users: command subscriptions at QoS 0. At
    // QoS 1, a device that NATS dropped while a node's death held JetStream up resubscribes through JetStream and
    // can be refused, staying connected and online but deaf to every command.
    commandQos: isCluster(broker) ? 0 : undefined,
  });
  await hearth.bridge.settle(5000);
  const seen: TestHome['seen'] = [];
  const watcher: MqttClient = await mqtt.connectAsync(broker.url, { protocolVersion: 4, reconnectPeriod: 100 });
  watcher.on('message', (topic, payload, packet) => {
    if (!packet.retain && !topic.startsWith('$')) seen.push({ topic, payload: payload.toString('utf8') });
  });
  // On NATS a QoS 1 subscription is delivered through a JetStream consumer, which lags (or, after a restart,
  // starts late); the watcher takes QoS 0 there (core NATS, as Hearth itself subscribes).
  await watcher.subscribeAsync('#', { qos: broker.kind === 'nats' ? 0 : 1 });
  await waitFor(
    'every entity has state',
    () =>
      hearth.bridge.registry.entities().every((e) => {
        const s = hearth.bridge.cache.get(e.id);
        return s && (s.value !== undefined || s.frame);
      }),
    30_000,
  );
  let markers = 0;
  return {
    hearth,
    sim,
    dir,
    seen,
    logs,
    commands: () => seen.filter((m) => /\/set$/.test(m.topic)),
    async caughtUp() {
      const first = markers + 1;
      let sentAt = 0;
      // Sent again now and then: a watcher reconnecting after a broker restart misses what came before it.
      await waitFor(
        "Hearth's marker at the watcher",
        async () => {
          if (seen.some((m) => m.topic === CAUGHT_UP && Number(m.payload) >= first)) return true;
          if (Date.now() - sentAt > 250) {
            sentAt = Date.now();
            await hearth.bridge.connection.publish(CAUGHT_UP, String(++markers), { qos: 1 }).catch(() => undefined);
          }
          return false;
        },
        15_000,
      );
    },
    async close() {
      await watcher.endAsync(true).catch(() => undefined);
      await sim.close().catch(() => undefined);
      await hearth.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
