// Benchmark: resident memory with 10,000 entities mirrored.
//
// A broker (mosquitto when installed, else aedes; own process) holds retained state for a home of 10,000
// entities on 2,000 devices (Zigbee2MQTT-style JSON sensors, plugs with
// power readings, availability topics). Each variant then runs in a fresh
// Node process of its own, which measures itself after a full GC at start
// (modules loaded) and once every entity has its state:
//
//   baseline: a raw mqtt.js client subscribed to the same topics, keeping the
//             last payload of each topic in a Map: the least a mirror can hold
//   bridge:   Hearth.open with the 10,000-entity device file (SQLite, policy,
//             audit, registry, state cache, tool set in the default shape
//             `auto`, which is grouped at this size)
//   bridge, per-entity tools: the same with tools.shape per-entity (10,000+ tools)
//
// The ratio is the bridge's growth (RSS and heap over its own start) against
// the baseline's growth, measured in the same run.
//
// A script, not a test: it prints numbers and ratios and writes
// bench/results/memory.json; it never fails on timings or sizes.
// Knobs: BENCH_MEMORY_ONLY (variants, comma-separated: their rounds only), BENCH_MEMORY_ENTITIES (10000), BENCH_MEMORY_ROUNDS (5: processes per variant, alternating; the median's
// reported), BENCH_MEMORY_SETTLE_MS (1000), BENCH_MEMORY_PHASES (1: V8's spaces at
// each step; 2: and every mapping over 0.5 MiB resident), BENCH_MEMORY_SNAPSHOT (a folder: heap snapshots), BENCH_TMPDIR.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import mqtt from 'mqtt';
import { isSensor, zigbee2mqttDevice, zigbee2mqttState } from './lib/zigbee2mqtt-list.js';
import { envInt, fmt, machine, median, memoryMiB, nowNs, ratio, secondsSince, startBroker, table, tempDir, writeResults } from './lib/harness.js';

const ENTITIES = envInt('BENCH_MEMORY_ENTITIES', 10_000);
const ROUNDS = envInt('BENCH_MEMORY_ROUNDS', 5);
const PER_DEVICE = 5;
const DEVICES = Math.ceil(ENTITIES / PER_DEVICE);
type Variant = 'baseline' | 'bridge' | 'bridge-per-entity' | 'baseline-no-number-cache' | 'baseline-zigbee2mqtt' | 'bridge-zigbee2mqtt';

/** The Zigbee2MQTT home's prefix: apart from `zigbee2mqtt`, so the device-file variants never see it. */
const Z2M = 'z2mbench';

interface ChildReport {
  variant: Variant;
  start: Memory;
  mirrored: Memory;
  entities: number;
  topics: number;
  secondsToMirror: number;
  tools?: number;
  shape?: string;
}

/** The home, as device-file text and as the retained messages a broker would hold for it. */
function homeFile(): string {
  const lines = ['devices:'];
  for (let d = 0; d < DEVICES; d++) {
    const env = d % 2 === 0;
    lines.push(
      `  - id: m${d}`,
      `    name: ${env ? 'Sensor' : 'Plug'} ${d}`,
      `    area: Room ${d % 97}`,
      `    availability: { topic: mem/${d}/availability, path: state }`,
      '    entities:',
    );
    if (env) {
      lines.push(
        `      temperature: { kind: sensor, device_class: temperature, unit: "°C", state_topic: mem/${d}, value_path: temperature }`,
        `      humidity: { kind: sensor, device_class: humidity, unit: "%", state_topic: mem/${d}, value_path: humidity }`,
        `      pressure: { kind: sensor, device_class: pressure, unit: hPa, state_topic: mem/${d}, value_path: pressure }`,
        `      battery: { kind: sensor, device_class: battery, unit: "%", state_topic: mem/${d}, value_path: battery }`,
        `      occupancy: { kind: binary_sensor, device_class: motion, state_topic: mem/${d}, value_path: occupancy }`,
      );
    } else {
      lines.push(
        `      relay: { kind: switch, state_topic: mem/${d}/relay, command_topic: mem/${d}/relay/set }`,
        `      power: { kind: sensor, device_class: power, unit: W, state_topic: mem/${d}/energy, value_path: power }`,
        `      energy: { kind: sensor, device_class: energy, unit: kWh, state_topic: mem/${d}/energy, value_path: energy }`,
        `      voltage: { kind: sensor, device_class: voltage, unit: V, state_topic: mem/${d}/energy, value_path: voltage }`,
        `      current: { kind: sensor, device_class: current, unit: A, state_topic: mem/${d}/energy, value_path: current }`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}

/**
 * The same home as Zigbee2MQTT would publish it (the shape users bring): a bridge/devices list of the same 2,000
 * devices, named `<area>/<name>` as owners do, each device's state on its own topic and its availability.
 */
function zigbee2mqttMessages(): Array<[string, string]> {
  const name = (d: number) => `Room ${d % 97}/${isSensor(d) ? 'Sensor' : 'Plug'} ${d}`;
  const out: Array<[string, string]> = [
    [`${Z2M}/bridge/state`, JSON.stringify({ state: 'online' })],
    [`${Z2M}/bridge/devices`, JSON.stringify(Array.from({ length: DEVICES }, (_, d) => zigbee2mqttDevice(d, name(d))))],
  ];
  for (let d = 0; d < DEVICES; d++) {
    out.push([`${Z2M}/${name(d)}`, JSON.stringify(zigbee2mqttState(d))]);
    out.push([`${Z2M}/${name(d)}/availability`, JSON.stringify({ state: 'online' })]);
  }
  return out;
}

function retainedMessages(): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let d = 0; d < DEVICES; d++) {
    out.push([`mem/${d}/availability`, JSON.stringify({ state: 'online' })]);
    if (d % 2 === 0) {
      out.push([
        `mem/${d}`,
        // The sensor's Zigbee2MQTT state, and its battery voltage: the same bytes as before the list was shared.
        JSON.stringify({ ...zigbee2mqttState(d), voltage: 3000 }),
      ]);
    } else {
      out.push([`mem/${d}/relay`, d % 4 === 1 ? 'ON' : 'OFF']);
      out.push([`mem/${d}/energy`, JSON.stringify({ power: (d % 300) + 0.5, energy: d / 10, voltage: 229.8, current: 0.42 })]);
    }
  }
  return out;
}

// ====================================================================== child: one variant

/**
 * memoryMiB() once the process has settled: a full GC, a second of quiet (the GC's helper threads finish sweeping
 * and hand pages back), another full GC. Read at once, the raw mirror's growth swung 16-26 MiB between runs of the
 * same code with the same heap, and the ratio with it (BENCH_MEMORY_SETTLE_MS=0 reads at once).
 */
async function settledMemory(): Promise<Memory> {
  const ms = Number(process.env.BENCH_MEMORY_SETTLE_MS ?? 1000);
  if (ms > 0) {
    memoryMiB();
    await new Promise((r) => setTimeout(r, ms));
  }
  const m = memoryMiB();
  const { getHeapSpaceStatistics } = await import('node:v8');
  const v8 = getHeapSpaceStatistics().reduce((a, sp) => a + sp.physical_space_size, 0) / 2 ** 20;
  const files = fileBackedMiB();
  return { ...m, v8: round1(v8), files: round1(files), native: round1(m.rss - v8 - files) };
}

const round1 = (x: number) => Math.round(x * 10) / 10;

/** What one process holds, MiB: memoryMiB(), and the RSS split into V8's heap, pages of files, and the rest. */
type Memory = ReturnType<typeof memoryMiB> & {
  /** V8's spaces as resident (physical_space_size): the JavaScript heap with its free room. */
  v8: number;
  /** Resident pages of mapped files: node's binary (its builtins, ICU's data), native addons, libraries. */
  files: number;
  /** The rest: malloc (SQLite, the addons, V8's compiler and GC threads' arenas) and other anonymous memory. */
  native: number;
};

/** Linux: the resident pages of mapped files (0 elsewhere). */
function fileBackedMiB(): number {
  try {
    let kb = 0;
    let file = false;
    for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
      const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
      if (head) file = head[1]!.startsWith('/');
      else if (file) {
        const rss = /^Rss:\s+(\d+) kB/.exec(line);
        if (rss) kb += Number(rss[1]);
      }
    }
    return kb / 1024;
  } catch {
    return 0;
  }
}

/**
 * V8's heap spaces, the size each holds from the system (MiB), and the anonymous memory beside them
 * (BENCH_MEMORY_PHASES): what of the RSS is the JavaScript heap's, and what is not.
 */
async function heapSpaces(): Promise<string> {
  const { getHeapSpaceStatistics } = await import('node:v8');
  return getHeapSpaceStatistics()
    .filter((s) => s.space_size > 2 ** 20)
    .map((s) => `${s.space_name} ${(s.space_used_size / 2 ** 20).toFixed(1)} used of ${(s.physical_space_size / 2 ** 20).toFixed(1)} resident`)
    .concat(anonymousMemory())
    .join(', ');
}

/**
 * Linux: the resident size of malloc's main arena ([heap] in /proc/self/smaps: native memory such as SQLite's) and of
 * every anonymous mapping (V8's pages, pooled ones included, and the malloc arenas of V8's GC and compiler threads).
 */
function anonymousMemory(): string[] {
  try {
    const smaps = readFileSync('/proc/self/smaps', 'utf8');
    let heap = 0;
    let anon = 0;
    let current = '';
    for (const line of smaps.split('\n')) {
      const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
      if (head) current = head[1]!;
      const rss = /^Rss:\s+(\d+) kB/.exec(line);
      if (rss) {
        if (current === '[heap]') heap += Number(rss[1]);
        else if (current === '') anon += Number(rss[1]);
      }
    }
    if (process.env.BENCH_MEMORY_PHASES === '2') {
      const big: string[] = [];
      let cur = '';
      for (const line of smaps.split('\n')) {
        const head = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
        if (head) cur = `${((parseInt(head[2]!, 16) - parseInt(head[1]!, 16)) / 1048576).toFixed(1)}M ${head[3]} ${head[4] || 'anon'}`;
        const rss = /^Rss:\s+(\d+) kB/.exec(line);
        if (rss && Number(rss[1]) > 512) big.push(`${cur}=${(Number(rss[1]) / 1024).toFixed(1)}`);
      }
      console.error(`       maps > 0.5 MiB RSS: ${big.join('; ')}`);
    }
    return [`malloc [heap] ${(heap / 1024).toFixed(1)}`, `anonymous maps ${(anon / 1024).toFixed(1)}`];
  } catch {
    return [];
  }
}

async function child(variant: Variant, url: string, dir: string): Promise<ChildReport> {
  const { loadConfig } = await import('../src/config/load.js');
  const { Hearth } = await import('../src/hearth.js');
  const { silentLogger } = await import('../src/log.js');
  // The topics the raw mirror subscribes to, worked out before the measure starts (the home's messages are
  // the bench's, not the mirror's: with them the list's JSON would count as growth).
  const topics = [...new Set((variant.endsWith('zigbee2mqtt') ? zigbee2mqttMessages() : retainedMessages()).map(([t]) => t))];
  const start = await settledMemory();
  if (process.env.BENCH_MEMORY_PHASES) console.error(`    .. ${variant}: start: ${JSON.stringify(start)} ${await heapSpaces()}`);
  if (process.env.BENCH_MEMORY_SNAPSHOT && variant !== 'baseline')
    (await import('node:v8')).writeHeapSnapshot(join(process.env.BENCH_MEMORY_SNAPSHOT, `${variant}-start.heapsnapshot`));
  const t0 = nowNs();
  if (variant.startsWith('baseline')) {
    // Raw mqtt.js as anyone would run it: with its packet writer's default number cache (6 MiB of
    // Buffers), which importing the bridge's modules above turned off (src/mqtt/packet-numbers.ts).
    const { createRequire } = await import('node:module');
    const packet = createRequire(createRequire(import.meta.url).resolve('mqtt'))('mqtt-packet') as { writeToStream: { cacheNumbers: boolean } };
    packet.writeToStream.cacheNumbers = variant === 'baseline';
    const last = new Map<string, Buffer>();
    const client = await mqtt.connectAsync(url, { protocolVersion: 4 });
    (client.stream as Socket).setNoDelay(true);
    client.on('message', (topic, payload) => last.set(topic, payload));
    for (let i = 0; i < topics.length; i += 500) await client.subscribeAsync(topics.slice(i, i + 500), { qos: 0 });
    while (last.size < topics.length) await new Promise((r) => setTimeout(r, 20));
    const secondsToMirror = secondsSince(t0);
    const mirrored = await settledMemory();
    if (process.env.BENCH_MEMORY_PHASES) console.error(`    .. ${variant}: mirrored: ${JSON.stringify(mirrored)} ${await heapSpaces()}`);
    await client.endAsync(true);
    return { variant, start, mirrored, entities: ENTITIES, topics: last.size, secondsToMirror };
  }
  const { config } = loadConfig({
    cwd: dir,
    env: {},
    flags: {
      'mqtt.url': url,
      'mqtt.protocolVersion': '4',
      'devices.paths': [join(dir, variant === 'bridge-zigbee2mqtt' ? 'no-devices' : 'devices')],
      demo: false,
      'database.path': join(dir, `${variant}.db`),
      'tools.shape': variant === 'bridge-per-entity' ? 'per-entity' : 'auto',
      ...(variant === 'bridge-zigbee2mqtt' ? { 'discovery.zigbee2mqtt.prefix': Z2M } : {}),
    },
  });
  const hearth = await Hearth.open({ config, log: silentLogger, connectWaitMs: 10_000 });
  if (process.env.BENCH_MEMORY_PHASES)
    console.error(`    .. ${variant}: opened (device file, SQLite, tools), before the retained state: ${JSON.stringify(memoryMiB())} ${await heapSpaces()}`);
  // Discovered devices come with the list: wait for all of them first.
  for (let i = 0; hearth.bridge.registry.entities().length < ENTITIES; i++) {
    if (process.env.BENCH_MEMORY_PHASES && i % 250 === 0) console.error(`    .. ${variant}: ${hearth.bridge.registry.entities().length} entities so far`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const entities = hearth.bridge.registry.entities();
  const ready = () =>
    entities.every((e) => {
      const s = hearth.bridge.cache.get(e.id);
      return s && s.value !== undefined && s.available === true;
    });
  for (let i = 0; !ready(); i++) {
    if (process.env.BENCH_MEMORY_PHASES && i % 250 === 0) {
      const waiting = entities.filter((e) => !(hearth.bridge.cache.get(e.id)?.value !== undefined && hearth.bridge.cache.get(e.id)?.available === true));
      console.error(
        `    .. ${variant}: ${waiting.length} entities without state, e.g. ${waiting
          .slice(0, 3)
          .map((e) => `${e.id} ${JSON.stringify(hearth.bridge.cache.get(e.id))}`)
          .join('; ')}`,
      );
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  const secondsToMirror = secondsSince(t0);
  const mirrored = await settledMemory();
  if (process.env.BENCH_MEMORY_PHASES) console.error(`    .. ${variant}: mirrored: ${JSON.stringify(mirrored)} ${await heapSpaces()}`);
  // Where the bytes go: BENCH_MEMORY_SNAPSHOT=dir writes a heap snapshot of each bridge variant (bench/lib/heap-types.ts sums it by type).
  if (process.env.BENCH_MEMORY_SNAPSHOT) (await import('node:v8')).writeHeapSnapshot(join(process.env.BENCH_MEMORY_SNAPSHOT, `${variant}.heapsnapshot`));
  const report: ChildReport = {
    variant,
    start,
    mirrored,
    entities: entities.length,
    topics: hearth.bridge.cache.topics().length,
    secondsToMirror,
    tools: hearth.tools.all().length,
    shape: hearth.tools.shape,
  };
  await hearth.close();
  return report;
}

// ====================================================================== parent

async function parent(): Promise<void> {
  const tmp = tempDir('hearth-bench-memory');
  const startedAt = new Date().toISOString();
  const t0 = nowNs();
  console.log(
    `memory: Node ${process.version}, ${machine().cpus} cores; ${ENTITIES.toLocaleString('en-US')} entities on ${DEVICES.toLocaleString('en-US')} devices, each variant in its own process\n`,
  );
  // mosquitto replays thousands of retained messages at once; aedes looks each subscription up one by one (slow, but it works).
  const broker = (await startBroker('mosquitto')) ?? (await startBroker('aedes'));
  if (!broker) throw new Error('no broker started');
  try {
    mkdirSync(join(tmp.path, 'devices'));
    mkdirSync(join(tmp.path, 'no-devices'));
    writeFileSync(join(tmp.path, 'devices', 'home.yaml'), homeFile());
    const pub = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    const messages = [...retainedMessages(), ...zigbee2mqttMessages()];
    for (let i = 0; i < messages.length; i++) {
      const [topic, payload] = messages[i]!;
      if (i % 500 === 499) await pub.publishAsync(topic, payload, { qos: 1, retain: true });
      else pub.publish(topic, payload, { qos: 0, retain: true });
    }
    await pub.endAsync();
    console.log(
      `  broker: ${broker.label}, holding ${messages.length.toLocaleString('en-US')} retained messages on ${new Set(messages.map(([t]) => t)).size.toLocaleString('en-US')} topics`,
    );

    // Each variant in ROUNDS processes, alternating, and the one of median RSS growth reported: a process's RSS
    // moves by a few MiB from run to run with the same heap (malloc arenas, pages V8 keeps).
    const variants = ['baseline', 'bridge', 'bridge-per-entity', 'baseline-no-number-cache', 'baseline-zigbee2mqtt', 'bridge-zigbee2mqtt'] as const;
    const runs = new Map<Variant, ChildReport[]>(variants.map((v) => [v, []]));
    const only = process.env.BENCH_MEMORY_ONLY?.split(',');
    for (let round = 0; round < ROUNDS; round++) {
      // The last one is for reference only: the raw mirror with the number cache off, as the bridge runs.
      for (const variant of variants) {
        if (only && !only.includes(variant)) continue;
        const a = nowNs();
        const r = spawnSync(
          process.execPath,
          [
            ...(process.env.BENCH_MEMORY_NODE_FLAGS ?? '').split(' ').filter(Boolean),
            '--import',
            'tsx',
            fileURLToPath(import.meta.url),
            '--child',
            variant,
            broker.url,
            tmp.path,
          ],
          {
            encoding: 'utf8',
            stdio: ['ignore', 'pipe', 'inherit'],
            timeout: 120_000,
          },
        );
        const line = r.stdout.split('\n').find((l) => l.startsWith('{'));
        // What else the child printed (BENCH_MEMORY_NODE_FLAGS=--trace-gc, say), for whoever asked for it.
        if (process.env.BENCH_MEMORY_PHASES) for (const l of r.stdout.split('\n')) if (l && !l.startsWith('{')) console.error(`    .. ${variant}| ${l}`);
        if (r.status !== 0 || !line) throw new Error(`variant ${variant} failed (status ${r.status}): ${r.stdout.slice(-500)}`);
        const report = JSON.parse(line) as ChildReport;
        runs.get(variant)!.push(report);
        console.log(
          `    .. round ${round + 1}/${ROUNDS} ${variant}: RSS growth ${fmt(report.mirrored.rss - report.start.rss, 1)} MiB, heap ${fmt(report.mirrored.heapUsed - report.start.heapUsed, 1)} (${secondsSince(a).toFixed(1)} s)`,
        );
      }
    }
    // Some variants only (BENCH_MEMORY_ONLY, while working on one): their rounds above are the answer.
    if (only) return;
    const rssGrowth = (r: ChildReport) => r.mirrored.rss - r.start.rss;
    const reports = variants.map((v) => {
      const all = runs.get(v)!;
      const m = median(all.map(rssGrowth));
      return all.find((r) => rssGrowth(r) === m)!;
    });
    const spread = (v: Variant) => {
      const g = runs.get(v)!.map(rssGrowth);
      return `${fmt(Math.min(...g), 1)}-${fmt(Math.max(...g), 1)}`;
    };

    const base = reports[0]!;
    const growth = (r: ChildReport) => ({ rss: r.mirrored.rss - r.start.rss, heap: r.mirrored.heapUsed - r.start.heapUsed });
    const bg = growth(base);
    const zBase = reports[variants.indexOf('baseline-zigbee2mqtt')]!;
    console.log('');
    table(
      [
        `process (MiB, settled; median of ${ROUNDS})`,
        'entities',
        'topics',
        'tools',
        'RSS at start',
        'RSS mirrored',
        'RSS growth',
        'rounds',
        'vs baseline',
        'of it: V8 / native / files',
        'heap growth',
        'vs baseline',
        'external+buffers',
        'KiB/entity (RSS)',
        's to mirror',
      ],
      reports.map((r) => {
        const g = growth(r);
        const first = r === base;
        return [
          r.variant === 'baseline'
            ? 'baseline: raw mqtt.js, last payload per topic'
            : r.variant === 'baseline-no-number-cache'
              ? '(reference) raw mirror, number cache off too'
              : r.variant === 'baseline-zigbee2mqtt'
                ? 'Zigbee2MQTT home: raw mqtt.js mirror'
                : r.variant === 'bridge-zigbee2mqtt'
                  ? `Zigbee2MQTT home: bridge (tools ${r.shape})`
                  : r.variant === 'bridge'
                    ? `bridge (tools ${r.shape})`
                    : `bridge, tools ${r.shape}`,
          r.entities.toLocaleString('en-US'),
          r.topics.toLocaleString('en-US'),
          r.tools === undefined ? '' : r.tools.toLocaleString('en-US'),
          fmt(r.start.rss, 1),
          fmt(r.mirrored.rss, 1),
          fmt(g.rss, 1),
          spread(r.variant),
          first || r.variant === 'baseline-zigbee2mqtt' ? '' : ratio(g.rss, growth(r.variant === 'bridge-zigbee2mqtt' ? zBase : base).rss),
          `${fmt(r.mirrored.v8 - r.start.v8, 1)} / ${fmt(r.mirrored.native - r.start.native, 1)} / ${fmt(r.mirrored.files - r.start.files, 1)}`,
          fmt(g.heap, 1),
          first || r.variant === 'baseline-zigbee2mqtt' ? '' : ratio(g.heap, growth(r.variant === 'bridge-zigbee2mqtt' ? zBase : base).heap),
          fmt(r.mirrored.external + r.mirrored.arrayBuffers, 1),
          fmt((g.rss * 1024) / r.entities, 2),
          fmt(r.secondsToMirror, 2),
        ];
      }),
    );
    const bridge = reports[1]!;
    console.log(
      `\n  resident size with ${bridge.entities.toLocaleString('en-US')} entities mirrored: ${fmt(bridge.mirrored.rss, 1)} MiB RSS (${fmt(growth(bridge).rss, 1)} MiB over the process at start, ${ratio(growth(bridge).rss, bg.rss)} the raw mirror's growth)`,
    );
    const memRatio = growth(bridge).rss / bg.rss;
    console.log(
      `TARGET memory, ${bridge.entities.toLocaleString('en-US')} entities mirrored (default tools): RSS growth <= 2x the raw mirror's: ${memRatio <= 2 ? 'MET' : 'NOT MET'} (${ratio(growth(bridge).rss, bg.rss)}; ${fmt((growth(bridge).rss * 1024) / bridge.entities, 2)} KiB per entity against ${fmt((bg.rss * 1024) / base.entities, 2)})`,
    );
    const zBridge = reports[variants.indexOf('bridge-zigbee2mqtt')]!;
    console.log(
      `  the same home from Zigbee2MQTT (discovered, named <area>/<name>; its list on the broker too): RSS growth ${fmt(growth(zBridge).rss, 1)} MiB against its raw mirror's ${fmt(growth(zBase).rss, 1)}: ${ratio(growth(zBridge).rss, growth(zBase).rss)} (heap ${fmt(growth(zBridge).heap, 1)} against ${fmt(growth(zBase).heap, 1)}: ${ratio(growth(zBridge).heap, growth(zBase).heap)})`,
    );
    const ref = reports.find((r) => r.variant === 'baseline-no-number-cache');
    if (ref) {
      console.log(
        `  (reference) against a raw mirror with MQTT.js's number cache off too (${fmt(growth(ref).rss, 1)} MiB growth): ${ratio(growth(bridge).rss, growth(ref).rss)}`,
      );
    }
    const file = writeResults('memory', {
      bench: 'memory',
      startedAt,
      seconds: Math.round(secondsSince(t0) * 10) / 10,
      machine: machine(),
      config: { entities: ENTITIES, devices: DEVICES, retainedMessages: messages.length },
      note: 'MiB from process.memoryUsage() once settled (a full GC, BENCH_MEMORY_SETTLE_MS of quiet, a full GC), in fresh processes per variant (BENCH_MEMORY_ROUNDS, alternating; the report of median RSS growth): at start (modules loaded) and once every entity has its state. Growth = mirrored - start; v8 = V8 spaces resident, files = resident pages of mapped files, native = the rest. The broker runs in its own process and is not counted.',
      rounds: Object.fromEntries(
        [...runs].map(([v, all]) => [v, all.map((r) => ({ rss: r.mirrored.rss - r.start.rss, heap: r.mirrored.heapUsed - r.start.heapUsed }))]),
      ),
      reports,
    });
    console.log(`results: ${file} (${secondsSince(t0).toFixed(1)} s)`);
  } finally {
    await broker.stop();
    tmp.cleanup();
  }
}

const args = process.argv.slice(2);
if (args[0] === '--child') {
  const report = await child(args[1] as Variant, args[2]!, args[3]!);
  console.log(JSON.stringify(report));
  process.exit(0);
} else {
  await parent();
}
