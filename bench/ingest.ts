// Benchmark: ingest. The bridge's state cache (StateCache over its
// MqttConnection) against a raw mqtt.js subscriber counting the same stream,
// measured in the same run on the same broker.
//
// A publisher in its own process sends QoS 0 messages round-robin over 2,000
// topics, each payload a small JSON object carrying a per-topic sequence
// number. Each subscriber, alone on the broker in its turn, subscribes to
// those 2,000 topics and checks every topic's sequence: a gap is a lost
// message, a step back a reordered one. The cache's side counts `change`
// events, so a message counts only once it has been decoded into an entity's
// state. Rounds alternate which subscriber goes first.
//
// Also measured in-process (no network): StateCache.handle() on the same
// messages against the raw subscriber's handler (JSON.parse + sequence check),
// which is what each message costs the bridge's CPU.
//
// A script, not a test: it prints numbers and ratios and writes
// bench/results/ingest.json; it never fails on timings.
// Knobs: BENCH_INGEST_TOPICS (2000), BENCH_INGEST_PER_TOPIC (40 messages per topic per run), BENCH_ROUNDS (3).
import type { Socket } from 'node:net';
import mqtt from 'mqtt';
import { parseDeviceFile } from '../src/devices/loader.js';
import type { Device } from '../src/devices/model.js';
import { StateCache, type MessageSource } from '../src/devices/state-cache.js';
import { silentLogger } from '../src/log.js';
import { MqttConnection } from '../src/mqtt/connection.js';
import {
  envInt,
  fmt,
  machine,
  median,
  nodeHelper,
  nowNs,
  progress,
  ratio,
  secondsSince,
  startBroker,
  table,
  writeResults,
  type BrokerKind,
  type Helper,
} from './lib/harness.js';

const TOPICS = envInt('BENCH_INGEST_TOPICS', 2000);
const PER_TOPIC = envInt('BENCH_INGEST_PER_TOPIC', 40);
/** Rounds per subscriber per broker: the ratio is the median of the rounds' paired ratios (issue 18: 5). */
const ROUNDS = envInt('BENCH_INGEST_ROUNDS', envInt('BENCH_ROUNDS', 5));
const PREFIX = 'bench/ingest';
const EXPECTED = TOPICS * PER_TOPIC;
const TARGET_RATIO = 0.9;
const startedAt = new Date().toISOString();
const t0 = nowNs();

console.log(
  `ingest: Node ${process.version}, ${machine().cpus} cores; ${TOPICS.toLocaleString('en-US')} topics x ${PER_TOPIC} messages = ` +
    `${EXPECTED.toLocaleString('en-US')} QoS 0 messages per run, ${ROUNDS} rounds per subscriber per broker\n`,
);

/** The publisher: on `run <id> <perTopic>`, sends perTopic rounds over all topics as fast as the socket takes them. */
const PUBLISHER_CODE = `
import mqtt from 'mqtt';
const topics = Number(process.env.TOPICS);
const prefix = process.env.PREFIX;
const c = await mqtt.connectAsync(process.env.URL, { protocolVersion: 4, clientId: 'bench-publisher-' + process.pid });
c.stream.setNoDelay(true);
const names = Array.from({ length: topics }, (_, t) => prefix + '/' + t);
console.log('ready');
let chain = Promise.resolve();
let buffer = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => {
  buffer += d;
  let nl;
  while ((nl = buffer.indexOf('\\n')) >= 0) {
    const [cmd, id, per] = buffer.slice(0, nl).split(' ');
    buffer = buffer.slice(nl + 1);
    if (cmd === 'run') chain = chain.then(() => run(Number(id), Number(per)));
  }
});
process.stdin.on('end', () => process.exit(0));
async function run(id, per) {
  const start = performance.now();
  let n = 0;
  for (let s = 0; s < per; s++) {
    for (let t = 0; t < topics; t++) {
      const payload = '{"seq":' + s + ',"run":' + id + ',"temperature":21.5,"humidity":44,"battery":97}';
      n++;
      // Wait for the socket now and then: the publisher must not buffer the whole run in memory.
      if (n % 256 === 0) await new Promise((r) => c.publish(names[t], payload, { qos: 0 }, r));
      else c.publish(names[t], payload, { qos: 0 });
    }
  }
  await new Promise((r) => c.publish(prefix + '/done', String(id), { qos: 1 }, r));
  console.log('sent ' + id + ' ' + n + ' ' + ((performance.now() - start) / 1000));
}
`;

interface RunStats {
  subscriber: 'raw' | 'cache';
  received: number;
  lost: number;
  reordered: number;
  seconds: number;
  perSecond: number;
  /** Subscriber process CPU (user + system) per message, µs. */
  cpuUsPerMessage: number;
  publisherSeconds: number;
}

/** Per-topic sequence checking, shared by both subscribers. */
class Checker {
  last = new Int32Array(TOPICS).fill(-1);
  received = 0;
  lost = 0;
  reordered = 0;
  first = 0n;
  lastAt = 0n;
  private done?: () => void;
  private target = 0;

  reset(target: number): Promise<void> {
    this.last.fill(-1);
    this.received = this.lost = this.reordered = 0;
    this.first = this.lastAt = 0n;
    this.target = target;
    return new Promise((resolve) => (this.done = resolve));
  }

  see(topic: number, seq: number): void {
    const prev = this.last[topic]!;
    if (seq !== prev + 1) {
      if (seq <= prev) this.reordered++;
      else this.lost += seq - prev - 1;
    }
    this.last[topic] = seq;
    const now = nowNs();
    if (this.received++ === 0) this.first = now;
    this.lastAt = now;
    if (this.received === this.target) this.done?.();
  }

  /** Topics that got nothing this run. */
  silent(): number {
    let n = 0;
    for (const v of this.last) if (v < 0) n++;
    return n;
  }
}

const topicIndex = (topic: string): number => Number(topic.slice(PREFIX.length + 1));

function homeDevices(): Device[] {
  const lines = ['devices:'];
  const perDevice = 100;
  for (let d = 0; d * perDevice < TOPICS; d++) {
    lines.push(`  - id: ing${d}`, `    name: Ingest ${d}`, '    entities:');
    for (let i = d * perDevice; i < Math.min(TOPICS, (d + 1) * perDevice); i++) {
      lines.push(`      t${i}: { kind: sensor, state_topic: ${PREFIX}/${i}, value_path: seq }`);
    }
  }
  const parsed = parseDeviceFile('ingest.yaml', `${lines.join('\n')}\n`);
  if (!('devices' in parsed)) throw new Error(JSON.stringify(parsed.problems.slice(0, 3)));
  return parsed.devices;
}

interface Subscriber {
  name: 'raw' | 'cache';
  checker: Checker;
  close(): Promise<void>;
}

async function rawSubscriber(url: string): Promise<Subscriber> {
  const checker = new Checker();
  const client = await mqtt.connectAsync(url, { protocolVersion: 4, clientId: `bench-raw-${process.pid}` });
  (client.stream as Socket).setNoDelay(true);
  client.on('message', (topic, payload) => {
    const seq = (JSON.parse(payload.toString()) as { seq: number }).seq;
    checker.see(topicIndex(topic), seq);
  });
  const topics = Array.from({ length: TOPICS }, (_, t) => `${PREFIX}/${t}`);
  for (let i = 0; i < topics.length; i += 500) await client.subscribeAsync(topics.slice(i, i + 500), { qos: 0 });
  return { name: 'raw', checker, close: () => client.endAsync(true) };
}

async function cacheSubscriber(url: string, devices: Device[]): Promise<Subscriber> {
  const checker = new Checker();
  const connection = new MqttConnection({ url, protocolVersion: 4, reconnectMinMs: 100, clientId: `bench-cache-${process.pid}` }, silentLogger);
  const cache = new StateCache(connection, silentLogger);
  const index = new Map<string, number>();
  for (const d of devices) for (const e of d.entities) index.set(e.id, topicIndex(e.stateTopic!));
  cache.on('change', (state, entity) => checker.see(index.get(entity.id)!, state.value as number));
  cache.setDevices(devices);
  await connection.waitConnected(10_000);
  return {
    name: 'cache',
    checker,
    async close() {
      cache.close();
      await connection.close();
    },
  };
}

let runId = 0;
async function runOnce(pub: Helper, sub: Subscriber, perTopic: number): Promise<RunStats & { silent: number }> {
  const id = ++runId;
  const expected = TOPICS * perTopic;
  const finished = sub.checker.reset(expected);
  const cpu0 = process.cpuUsage();
  pub.send(`run ${id} ${perTopic}`);
  const sent = pub.line(new RegExp(`^sent ${id} `), 120_000);
  // Done when every message is in, or 2 s after the publisher finished without them.
  const publisherSeconds = Number((await Promise.race([sent, finished.then(() => sent)])).split(' ')[3]);
  await Promise.race([finished, new Promise((r) => setTimeout(r, 2000))]);
  const cpu = process.cpuUsage(cpu0);
  const c = sub.checker;
  const seconds = c.received > 1 ? Number(c.lastAt - c.first) / 1e9 : NaN;
  return {
    subscriber: sub.name,
    received: c.received,
    lost: c.lost + (expected - c.received - c.lost > 0 ? 0 : 0),
    reordered: c.reordered,
    seconds,
    perSecond: c.received / seconds,
    cpuUsPerMessage: (cpu.user + cpu.system) / Math.max(1, c.received),
    publisherSeconds,
    silent: c.silent(),
  };
}

interface BrokerIngest {
  broker: string;
  label: string;
  runs: RunStats[];
  raw: { perSecond: number; cpuUsPerMessage: number; lost: number; reordered: number; missing: number };
  cache: { perSecond: number; cpuUsPerMessage: number; lost: number; reordered: number; missing: number };
  ratio: number;
  /** cache msg/s / raw msg/s of each round. */
  roundRatios: number[];
}

async function benchBroker(kind: BrokerKind, devices: Device[]): Promise<BrokerIngest | undefined> {
  const broker = await startBroker(kind);
  if (!broker) {
    console.log(`  ${kind}: not installed, skipped\n`);
    return undefined;
  }
  console.log(`  broker: ${broker.label}`);
  const pub = nodeHelper(PUBLISHER_CODE, { URL: broker.url, TOPICS: String(TOPICS), PREFIX });
  try {
    await pub.line(/^ready$/, 15_000);
    const runs: RunStats[] = [];
    const make = (name: 'raw' | 'cache') => (name === 'raw' ? rawSubscriber(broker.url) : cacheSubscriber(broker.url, devices));
    const pg = progress(`${kind}: runs`, ROUNDS * 2);
    for (let round = 0; round < ROUNDS; round++) {
      const order: Array<'raw' | 'cache'> = round % 2 ? ['cache', 'raw'] : ['raw', 'cache'];
      for (const name of order) {
        const sub = await make(name);
        try {
          // Warm-up run: subscriptions in place (every topic heard from), JIT warm.
          for (let attempt = 0; ; attempt++) {
            const w = await runOnce(pub, sub, 2);
            if (w.silent === 0) break;
            if (attempt >= 5) throw new Error(`${name}: ${w.silent} topics still silent after the warm-up`);
          }
          runs.push(await runOnce(pub, sub, PER_TOPIC));
        } finally {
          await sub.close();
        }
        pg.tick(runs.length);
      }
    }
    pg.end();
    const agg = (name: 'raw' | 'cache') => {
      const rs = runs.filter((r) => r.subscriber === name);
      return {
        perSecond: Math.round(median(rs.map((r) => r.perSecond))),
        cpuUsPerMessage: Math.round(median(rs.map((r) => r.cpuUsPerMessage)) * 100) / 100,
        lost: rs.reduce((s, r) => s + r.lost, 0),
        reordered: rs.reduce((s, r) => s + r.reordered, 0),
        missing: rs.reduce((s, r) => s + (EXPECTED - r.received), 0),
      };
    };
    const raw = agg('raw');
    const cache = agg('cache');
    // Each round's cache run against the raw run of the same round (they ran back to back), then the median.
    const roundRatios = Array.from({ length: ROUNDS }, (_, i) => {
      const inRound = runs.slice(i * 2, i * 2 + 2);
      const r = inRound.find((x) => x.subscriber === 'raw')!;
      const c = inRound.find((x) => x.subscriber === 'cache')!;
      return c.perSecond / r.perSecond;
    });
    const result: BrokerIngest = { broker: kind, label: broker.label, runs, raw, cache, ratio: median(roundRatios), roundRatios };
    console.log('');
    table(
      ['subscriber (median of rounds)', 'msg/s', 'vs raw', 'CPU µs/msg', 'CPU vs raw', 'lost', 'reordered', 'publisher msg/s'],
      (['raw', 'cache'] as const).map((name) => {
        const a = name === 'raw' ? raw : cache;
        const pubRate = median(runs.filter((r) => r.subscriber === name).map((r) => EXPECTED / r.publisherSeconds));
        return [
          name === 'raw' ? 'baseline: raw mqtt.js subscriber' : 'StateCache over MqttConnection',
          a.perSecond.toLocaleString('en-US'),
          name === 'raw' ? '' : ratio(a.perSecond, raw.perSecond),
          fmt(a.cpuUsPerMessage, 2),
          name === 'raw' ? '' : ratio(a.cpuUsPerMessage, raw.cpuUsPerMessage),
          String(a.lost + a.missing),
          String(a.reordered),
          Math.round(pubRate).toLocaleString('en-US'),
        ];
      }),
    );
    console.log(`  rounds (cache / raw msg/s): ${roundRatios.map((x) => `${fmt(x, 2)}x`).join(', ')}`);
    console.log(
      `TARGET ingest ${kind}: >= ${TARGET_RATIO}x raw msg/s (median of ${ROUNDS} rounds), nothing lost or reordered: ${result.ratio >= TARGET_RATIO && cache.lost + cache.missing + cache.reordered === 0 ? 'MET' : 'NOT MET'} (${fmt(result.ratio, 2)}x; rounds ${fmt(Math.min(...roundRatios), 2)}-${fmt(Math.max(...roundRatios), 2)}x; CPU per message ${fmt(cache.cpuUsPerMessage, 2)} µs against raw ${fmt(raw.cpuUsPerMessage, 2)} (+${fmt(cache.cpuUsPerMessage - raw.cpuUsPerMessage, 2)}); lost ${cache.lost + cache.missing}, reordered ${cache.reordered})\n`,
    );
    return result;
  } finally {
    await pub.stop();
    await broker.stop();
  }
}

/** CPU per message with no network: StateCache.handle() vs the raw handler, on the same buffers. */
function inProcess(devices: Device[]) {
  const n = Math.min(EXPECTED * 2, 400_000);
  const topics = Array.from({ length: TOPICS }, (_, t) => `${PREFIX}/${t}`);
  const payloads = Array.from({ length: n }, (_, i) => Buffer.from(`{"seq":${Math.floor(i / TOPICS)},"run":1,"temperature":21.5,"humidity":44,"battery":97}`));
  const source: MessageSource = { subscribe() {}, unsubscribe() {}, resubscribe: () => [], on() {}, off() {} };
  const cache = new StateCache(source, silentLogger);
  cache.setDevices(devices);
  const index = new Map<string, number>();
  for (const d of devices) for (const e of d.entities) index.set(e.id, topicIndex(e.stateTopic!));
  const cacheChecker = new Checker();
  cache.on('change', (state, entity) => cacheChecker.see(index.get(entity.id)!, state.value as number));
  const rawChecker = new Checker();
  const rawHandle = (topic: string, payload: Buffer) => rawChecker.see(topicIndex(topic), (JSON.parse(payload.toString()) as { seq: number }).seq);
  const time = (fn: (topic: string, payload: Buffer) => void, checker: Checker) => {
    const out: number[] = [];
    for (let r = 0; r < 3; r++) {
      void checker.reset(n);
      const a = nowNs();
      for (let i = 0; i < n; i++) fn(topics[i % TOPICS]!, payloads[i]!);
      out.push(Number(nowNs() - a) / 1e3 / n);
    }
    return median(out);
  };
  time(rawHandle, rawChecker); // warm-up
  time((t, p) => cache.handle(t, p), cacheChecker);
  const rawUs = time(rawHandle, rawChecker);
  const cacheUs = time((t, p) => cache.handle(t, p), cacheChecker);
  console.log(`  in-process, no network (${n.toLocaleString('en-US')} messages, median of 3):`);
  table(
    ['handler', 'µs/msg', 'msg/s', 'vs raw'],
    [
      ['baseline: JSON.parse + sequence check', fmt(rawUs, 3), Math.round(1e6 / rawUs).toLocaleString('en-US'), ''],
      ['StateCache.handle() + change event', fmt(cacheUs, 3), Math.round(1e6 / cacheUs).toLocaleString('en-US'), ratio(cacheUs, rawUs)],
    ],
  );
  console.log('');
  return { messages: n, rawUsPerMessage: rawUs, cacheUsPerMessage: cacheUs, lostOrReordered: cacheChecker.lost + cacheChecker.reordered };
}

const devices = homeDevices();
const cpu = inProcess(devices);
const results: BrokerIngest[] = [];
for (const kind of ['aedes', 'mosquitto'] as const) {
  const r = await benchBroker(kind, devices);
  if (r) results.push(r);
}
const file = writeResults('ingest', {
  bench: 'ingest',
  startedAt,
  seconds: Math.round(secondsSince(t0) * 10) / 10,
  machine: machine(),
  config: { topics: TOPICS, perTopic: PER_TOPIC, messagesPerRun: EXPECTED, rounds: ROUNDS, qos: 0 },
  note: "Rates are messages/s from the first to the last message a subscriber received, median of rounds; CPU is the subscriber process (user + system) per message. lost counts gaps in a topic's sequence plus messages that never arrived; reordered counts steps back. Broker and publisher run in their own processes; each subscriber is alone on the broker during its run.",
  inProcess: cpu,
  results: results.map(({ runs, ...r }) => ({ ...r, runs })),
  targets: results.map((r) => ({
    broker: r.broker,
    ratio: Math.round(r.ratio * 100) / 100,
    met: r.ratio >= TARGET_RATIO && r.cache.lost + r.cache.missing + r.cache.reordered === 0,
  })),
});
console.log('summary (StateCache / raw subscriber):');
table(
  ['broker', 'raw msg/s', 'cache msg/s', 'ratio', 'raw CPU µs/msg', 'cache CPU µs/msg', 'lost', 'reordered'],
  results.map((r) => [
    r.broker,
    r.raw.perSecond.toLocaleString('en-US'),
    r.cache.perSecond.toLocaleString('en-US'),
    ratio(r.cache.perSecond, r.raw.perSecond),
    fmt(r.raw.cpuUsPerMessage, 2),
    fmt(r.cache.cpuUsPerMessage, 2),
    `${r.raw.lost + r.raw.missing} / ${r.cache.lost + r.cache.missing}`,
    `${r.raw.reordered} / ${r.cache.reordered}`,
  ]),
);
console.log(`results: ${file} (${secondsSince(t0).toFixed(1)} s)`);
