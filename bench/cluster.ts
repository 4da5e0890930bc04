// Benchmark: Hearth on a clustered broker (#34), against raw mqtt.js on the same cluster in the same run.
//
// For each cluster (a 3-node NATS cluster with MQTT on JetStream; a 2-node RabbitMQ cluster with its MQTT plugin),
// started by the test helpers on free loopback ports:
//   round trip: hearth.tools.call on a switch -> publish (QoS 0: commands on MQTT 3.1.1 go at QoS 0, never late)
//               -> an echo device republishes the command on the state topic -> confirmed -> audit -> result;
//               raw: mqtt.js publish (QoS 0) -> the same echo. Hearth (and the raw client) are on node 1, the echo
//               device on node 0: every command crosses the cluster. Raw and Hearth batches alternate. Where
//               Hearth's time goes is measured in place (bench/lib/call-timing.ts, as bench/roundtrip.ts does).
//   ingest:     a publisher on node 0 sends QoS 0 state messages round-robin over many sensor topics; Hearth's
//               state cache (change events) and a raw subscriber on node 1, both subscribed at once, each time
//               how long until the last one arrived.
//   failover:   the node Hearth is on is killed; a client calls at a steady rate; the time from the death to the
//               first confirmed call. Raw: an mqtt.js client with the same node list, publishing QoS 0 and
//               waiting for the echo at the same rate. Then the node is started again for the next round
//               (a killed RabbitMQ node takes a minute or two to come back: BENCH_CLUSTER_FAILOVERS=1 keeps it short).
//
// The echo device and the publisher are in this process (simpler; both sides share that cost equally).
// A script, not a test: it prints numbers and ratios and writes bench/results/cluster.json; it never fails on timings.
// Knobs: BENCH_CLUSTER_CALLS (400 per side), BENCH_CLUSTER_TOPICS (500), BENCH_CLUSTER_PER_TOPIC (20),
// BENCH_CLUSTER_FAILOVERS (3), BENCH_CLUSTER_ONLY (nats | rabbitmq).
import { mkdirSync, writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import mqtt, { type MqttClient } from 'mqtt';
import { loadConfig } from '../src/config/load.js';
import { Hearth } from '../src/hearth.js';
import { createLogger, silentLogger } from '../src/log.js';
import type { Principal } from '../src/tools/types.js';
import { startNatsCluster, type TestCluster } from '../test/helpers/nats-cluster.js';
import { startRabbitMq } from '../test/helpers/rabbitmq.js';
import { type CallTiming, timeCalls } from './lib/call-timing.js';
import { envInt, fmt, machine, median, nowNs, ratio, secondsSince, summarize, table, tempDir, writeResults, type Summary } from './lib/harness.js';

const CALLS = envInt('BENCH_CLUSTER_CALLS', 400);
const TOPICS = envInt('BENCH_CLUSTER_TOPICS', 500);
const PER_TOPIC = envInt('BENCH_CLUSTER_PER_TOPIC', 20);
const FAILOVERS = envInt('BENCH_CLUSTER_FAILOVERS', 3);
const ONLY = process.env.BENCH_CLUSTER_ONLY;
const BATCH = 50;
const STEADY_MS = 20;
const GIVE_UP_MS = envInt('BENCH_CLUSTER_GIVE_UP_MS', 60_000);
const OWNER: Principal = { id: 'cli:bench', roles: ['owner'] };
const ms = (t: bigint) => Number(nowNs() - t) / 1e6;
const sleep = (n: number) => new Promise<void>((r) => setTimeout(r, n));

const tmp = tempDir('hearth-bench-cluster');
const t0 = nowNs();
console.log(
  `cluster: Node ${process.version}, ${machine().cpus} cores; ${CALLS} round trips per side, ingest ${TOPICS} topics x ${PER_TOPIC}, ${FAILOVERS} failovers\n`,
);

function deviceFile(dir: string): string {
  const lines = [
    'devices:',
    '  - id: bench_switch',
    '    name: Bench switch',
    '    entities:',
    '      switch:',
    '        kind: switch',
    '        name: Bench switch',
  ];
  lines.push('        state_topic: bench/rt/hearth/state', '        command_topic: bench/rt/hearth/set');
  for (let i = 0; i < TOPICS; i++) {
    lines.push(
      `  - id: bench_sensor_${i}`,
      `    name: Bench sensor ${i}`,
      '    entities:',
      '      value:',
      '        kind: sensor',
      `        name: Bench sensor ${i}`,
    );
    lines.push(`        state_topic: bench/in/${i}/state`, '        value_path: v');
  }
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'bench.yaml'), `${lines.join('\n')}\n`);
  return dir;
}

async function connect(url: string, extra: mqtt.IClientOptions = {}): Promise<MqttClient> {
  const c = await mqtt.connectAsync(url, { protocolVersion: 4, reconnectPeriod: 100, ...extra });
  (c.stream as unknown as Socket).setNoDelay?.(true);
  c.on('connect', () => (c.stream as unknown as Socket).setNoDelay?.(true));
  return c;
}

/** The echo device: every command comes back at once on the state topic. */
async function echoDevice(url: string): Promise<MqttClient> {
  const c = await connect(url);
  c.on('message', (topic, payload) => c.publish(`${topic.slice(0, -4)}/state`, payload, { qos: 0 }));
  await c.subscribeAsync('bench/rt/+/set', { qos: 0 });
  return c;
}

/** A raw round trip: publish QoS 0, as Hearth publishes commands here, and resolve on the echo; with a bound, false when it passes. */
function rawRoundTrip(c: MqttClient, payload: string, withinMs?: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    let acked = false;
    let echoed = false;
    const timer = withinMs
      ? setTimeout(() => {
          c.off('message', onMessage);
          resolve(false);
        }, withinMs)
      : undefined;
    const onMessage = (topic: string, p: Buffer) => {
      if (topic !== 'bench/rt/raw/state' || p.toString() !== payload) return;
      echoed = true;
      if (acked) done();
    };
    const done = () => {
      clearTimeout(timer);
      c.off('message', onMessage);
      resolve(true);
    };
    c.on('message', onMessage);
    c.publish('bench/rt/raw/set', payload, { qos: 0 }, (err) => {
      if (err) {
        clearTimeout(timer);
        c.off('message', onMessage);
        if (withinMs) resolve(false);
        else reject(err);
        return;
      }
      acked = true;
      if (echoed) done();
    });
  });
}

async function openHearth(url: string, name: string): Promise<Hearth> {
  const dir = join(tmp.path, name);
  const { config } = loadConfig({
    cwd: dir,
    env: {},
    flags: {
      'mqtt.url': url,
      'mqtt.reconnectMinMs': '100',
      'mqtt.reconnectMaxMs': '400',
      'devices.paths': [deviceFile(join(dir, 'devices'))],
      demo: false,
      'database.path': join(dir, 'hearth.db'),
      'tools.shape': 'per-entity',
      'discovery.homeassistant.enabled': 'false',
      'discovery.zigbee2mqtt.enabled': 'false',
      'discovery.homie.enabled': 'false',
    },
  });
  const log = process.env.BENCH_DEBUG ? createLogger({ level: 'debug' }) : silentLogger;
  const hearth = await Hearth.open({ config, log, connectWaitMs: 30_000 });
  hearth.policy.add({ subject: 'role:owner', targetType: 'any', target: '*', action: 'actuate', effect: 'allow', note: 'bench' });
  return hearth;
}

interface ClusterResult {
  kind: string;
  nodes: number;
  startSeconds: number;
  raw: Summary;
  hearth: Summary;
  ratioP50: number;
  ingest: { messages: number; rawPerSecond: number; hearthPerSecond: number; ratio: number; hearthMissing: number };
  failover?: { rawMs: number[]; hearthMs: number[]; medianRawMs: number; medianHearthMs: number };
  /** p50 ms of the stages timed inside Hearth's calls, and of the call's timeline. */
  stagesP50: Record<string, number>;
  timelineP50: Record<string, number>;
}

/** A raw round trip whose echo has not come by then is lost. */
const RAW_LOST_MS = 10_000;
let rawLost = 0;

async function roundTrips(hearth: Hearth, raw: MqttClient, timing: CallTiming): Promise<{ raw: Summary; hearth: Summary }> {
  const rawMs: number[] = [];
  const hearthMs: number[] = [];
  for (const v of [...Object.values(timing.stages), ...Object.values(timing.timeline)]) v.length = 0;
  let n = 0;
  for (let done = 0; done < CALLS; done += BATCH) {
    for (let i = 0; i < BATCH; i++) {
      const t = nowNs();
      // QoS 0 may be dropped (NATS drops a slow consumer's messages): a lost echo is counted, not waited for.
      if (await rawRoundTrip(raw, `p${n++}`, RAW_LOST_MS)) rawMs.push(ms(t));
      else rawLost++;
    }
    for (let i = 0; i < BATCH; i++) {
      const t = nowNs();
      timing.start();
      const r = await hearth.tools.call('bench_switch', { action: n++ % 2 ? 'turn_on' : 'turn_off' }, OWNER);
      timing.end();
      if (!/^confirmed/.test(r.text ?? '')) throw new Error(`a bench call was not confirmed: ${r.text}`);
      hearthMs.push(ms(t));
    }
  }
  return { raw: summarize(rawMs), hearth: summarize(hearthMs) };
}

async function ingest(cluster: TestCluster, hearth: Hearth): Promise<ClusterResult['ingest']> {
  const total = TOPICS * PER_TOPIC;
  const listener = await connect(cluster.nodes[Math.min(1, cluster.nodes.length - 1)]!.url);
  const publisher = await connect(cluster.url);
  let rawCount = 0;
  let hearthCount = 0;
  const start = { at: 0n };
  let rawDone = 0;
  let hearthDone = 0;
  listener.on('message', (topic) => {
    if (!topic.startsWith('bench/in/')) return;
    if (++rawCount === total) rawDone = ms(start.at);
  });
  const onChange = (_s: unknown, e: { id: string }) => {
    if (!e.id.startsWith('bench_sensor_')) return;
    if (++hearthCount === total) hearthDone = ms(start.at);
  };
  hearth.bridge.cache.on('change', onChange as never);
  await listener.subscribeAsync('bench/in/+/state', { qos: 0 });
  await sleep(500);
  start.at = nowNs();
  for (let round = 0; round < PER_TOPIC; round++) {
    for (let i = 0; i < TOPICS; i++) publisher.publish(`bench/in/${i}/state`, `{"v":${round * TOPICS + i}}`, { qos: 0 });
    // Let the socket drain now and then, as a real stream of devices would.
    if (round % 2) await sleep(1);
  }
  const deadline = Date.now() + 60_000;
  while ((rawCount < total || hearthCount < total) && Date.now() < deadline) await sleep(20);
  hearth.bridge.cache.off('change', onChange as never);
  await listener.endAsync(true);
  await publisher.endAsync(true);
  const rawSeconds = (rawDone || ms(start.at)) / 1000;
  const hearthSeconds = (hearthDone || ms(start.at)) / 1000;
  return {
    messages: total,
    rawPerSecond: rawCount / rawSeconds,
    hearthPerSecond: hearthCount / hearthSeconds,
    ratio: hearthCount / hearthSeconds / (rawCount / rawSeconds),
    hearthMissing: total - hearthCount,
  };
}

/** Kill the node `client` is on; resolve with ms from the death to the first success of `attempt`. */
async function failoverOnce(cluster: TestCluster, node: () => string | undefined, attempt: () => Promise<boolean>): Promise<number> {
  const where = node();
  const index = where ? cluster.nodeIndexOfPort(Number(where.split(':')[1])) : -1;
  if (index < 0) throw new Error('not connected to a node');
  const died = nowNs();
  await cluster.killNode(index);
  let took = Number.POSITIVE_INFINITY;
  for (;;) {
    if (await attempt().catch(() => false)) {
      took = ms(died);
      break;
    }
    // Not served while the node is dead (NATS 2.9 can hold MQTT clients off until it is back): say so, go on.
    if (ms(died) > GIVE_UP_MS) break;
    await sleep(STEADY_MS);
  }
  await cluster.startNode(index);
  return took;
}

async function failovers(cluster: TestCluster, hearth: Hearth, nodeList: string): Promise<ClusterResult['failover']> {
  const rawMs: number[] = [];
  const hearthMs: number[] = [];
  const raw = await connect(nodeList.split(',')[0]!, {
    servers: nodeList.split(',').map((u) => ({ host: '127.0.0.1', port: Number(new URL(u).port) })),
  });
  await raw.subscribeAsync('bench/rt/raw/state', { qos: 0 });
  let n = 0;
  for (let round = 0; round < FAILOVERS; round++) {
    hearthMs.push(
      await failoverOnce(
        cluster,
        () => hearth.bridge.connection.node,
        async () => /^confirmed/.test((await hearth.tools.call('bench_switch', { action: n++ % 2 ? 'turn_on' : 'turn_off' }, OWNER)).text ?? ''),
      ),
    );
    // The raw client: dropping its in-flight publish on a lost connection as Hearth does is not its default
    // (MQTT.js resends it on reconnect), so each attempt is bounded and a late echo of an older one is ignored.
    rawMs.push(
      await failoverOnce(
        cluster,
        () => (raw.connected ? `127.0.0.1:${raw.options.port}` : undefined),
        () => (raw.connected ? rawRoundTrip(raw, `f${n++}`, 1000) : Promise.resolve(false)),
      ),
    );
  }
  await raw.endAsync(true);
  // JSON has no Infinity: a failover not served within the bound is null there.
  return { rawMs, hearthMs, medianRawMs: median(rawMs), medianHearthMs: median(hearthMs) };
}

async function benchCluster(kind: string, start: () => Promise<TestCluster>): Promise<ClusterResult> {
  const t = nowNs();
  const cluster = await start();
  const startSeconds = secondsSince(t);
  const other = Math.min(1, cluster.nodes.length - 1);
  const nodeList = cluster.nodeList(other);
  const echo = await echoDevice(cluster.url);
  const hearth = await openHearth(nodeList, kind);
  const timing = timeCalls(hearth, 'one commit + one fsync for the rows of the turn, awaited');
  const raw = await connect(cluster.nodes[other]!.url);
  await raw.subscribeAsync('bench/rt/raw/state', { qos: 0 });
  try {
    // Warm-up (NATS creates its JetStream assets for a client's first QoS 1 traffic).
    for (let i = 0; i < 20; i++) {
      await rawRoundTrip(raw, `w${i}`, RAW_LOST_MS);
      await hearth.tools.call('bench_switch', { action: i % 2 ? 'turn_on' : 'turn_off' }, OWNER);
    }
    const rt = await roundTrips(hearth, raw, timing);
    const p50s = (m: Record<string, number[]>) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, summarize(v).p50]));
    const stagesP50 = p50s(timing.stages);
    const timelineP50 = p50s(timing.timeline);
    const ing = await ingest(cluster, hearth);
    const fo = cluster.nodes.length > 1 ? await failovers(cluster, hearth, nodeList) : undefined;
    return {
      kind,
      nodes: cluster.nodes.length,
      startSeconds,
      raw: rt.raw,
      hearth: rt.hearth,
      ratioP50: rt.hearth.p50 / rt.raw.p50,
      ingest: ing,
      failover: fo,
      stagesP50,
      timelineP50,
    };
  } finally {
    await raw.endAsync(true).catch(() => undefined);
    await echo.endAsync(true).catch(() => undefined);
    await hearth.close().catch(() => undefined);
    await cluster.stop();
  }
}

const results: ClusterResult[] = [];
const clusters: Array<[string, () => Promise<TestCluster>]> = [
  ['nats', () => startNatsCluster()],
  ['rabbitmq', () => startRabbitMq({ nodes: 2 })],
];
for (const [kind, start] of clusters) {
  if (ONLY && ONLY !== kind) continue;
  console.log(`${kind}: starting...`);
  results.push(await benchCluster(kind, start));
}

console.log(
  `\nround trip (ms; Hearth: call -> policy -> audit -> QoS 0 publish -> echo -> confirmed; raw: QoS 0 publish -> echo${rawLost ? `; ${rawLost} raw echoes lost` : ''})`,
);
table(
  ['cluster', 'nodes', 'raw p50', 'raw p99', 'Hearth p50', 'Hearth p99', 'Hearth/raw p50'],
  results.map((r) => [
    r.kind,
    String(r.nodes),
    fmt(r.raw.p50, 2),
    fmt(r.raw.p99, 2),
    fmt(r.hearth.p50, 2),
    fmt(r.hearth.p99, 2),
    ratio(r.hearth.p50, r.raw.p50),
  ]),
);
console.log('\nwhere a Hearth call goes, per cluster (p50 ms, measured in place)');
for (const r of results) {
  const line = (m: Record<string, number>) =>
    Object.entries(m)
      .map(([k, v]) => `${k} ${fmt(v, 3)}`)
      .join(', ');
  console.log(`  ${r.kind} stages: ${line(r.stagesP50)}`);
  console.log(`  ${r.kind} timeline: ${line(r.timelineP50)}; raw publish -> echo ${fmt(r.raw.p50, 3)}`);
}
console.log('\ningest (QoS 0 state messages, msg/s until the last arrived; Hearth counts decoded state changes)');
table(
  ['cluster', 'messages', 'raw msg/s', 'Hearth msg/s', 'Hearth/raw', 'Hearth missing'],
  results.map((r) => [
    r.kind,
    String(r.ingest.messages),
    fmt(r.ingest.rawPerSecond),
    fmt(r.ingest.hearthPerSecond),
    ratio(r.ingest.hearthPerSecond, r.ingest.rawPerSecond),
    String(r.ingest.hearthMissing),
  ]),
);
const shown = (v: number) => (Number.isFinite(v) ? fmt(v, 0) : `>${GIVE_UP_MS}`);
console.log(`\nfailover (ms from the death of the connected node to the first call served again; given up after ${GIVE_UP_MS} ms)`);
table(
  ['cluster', 'raw (each)', 'Hearth (each)', 'raw median', 'Hearth median', 'Hearth/raw'],
  results.map((r) =>
    r.failover
      ? [
          r.kind,
          r.failover.rawMs.map(shown).join(' '),
          r.failover.hearthMs.map(shown).join(' '),
          shown(r.failover.medianRawMs),
          shown(r.failover.medianHearthMs),
          ratio(r.failover.medianHearthMs, r.failover.medianRawMs),
        ]
      : [r.kind, 'n/a (one node)', '', '', '', ''],
  ),
);
const file = writeResults('cluster', { machine: machine(), calls: CALLS, topics: TOPICS, perTopic: PER_TOPIC, results, seconds: secondsSince(t0) });
console.log(`\nwrote ${file} in ${fmt(secondsSince(t0))} s`);
tmp.cleanup();
process.exit(0);
