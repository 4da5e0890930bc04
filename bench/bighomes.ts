// Benchmark: a big home discovered at once. A retained Zigbee2MQTT
// bridge/devices list of 2,000 devices (10,000 entities) arrives at a running
// Hearth: how long from the payload's arrival until the tool set is
// regenerated (the registry's change, after which the tool set has rebuilt) with every entity, and how long the event loop is held while
// that happens (perf_hooks.monitorEventLoopDelay, 1 ms resolution): a
// stall over 100 ms delays every other call, echo and message of the home.
//
// The baseline, in the same run: JSON.parse of the same payload (what reading
// the list costs at the least).
// Knobs: BENCH_BIGHOME_DEVICES (2000, 5 entities each), BENCH_BIGHOME_ROUNDS (3).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import mqtt from 'mqtt';
import { loadConfig } from '../src/config/load.js';
import { Hearth } from '../src/hearth.js';
import { silentLogger } from '../src/log.js';
import { envInt, fmt, machine, median, nowNs, ratio, secondsSince, startBroker, table, tempDir, writeResults } from './lib/harness.js';

const DEVICES = envInt('BENCH_BIGHOME_DEVICES', 2000);
const ROUNDS = envInt('BENCH_BIGHOME_ROUNDS', 3);
const STALL_TARGET_MS = 100;
const tmp = tempDir('hearth-bench-bighome');
const startedAt = new Date().toISOString();
const t0 = nowNs();

console.log(
  `bighomes: Node ${process.version}, ${machine().cpus} cores; a Zigbee2MQTT bridge/devices list of ${DEVICES.toLocaleString('en-US')} devices arriving at a running Hearth, ${ROUNDS} rounds\n`,
);

const numeric = (name: string, unit: string) => ({ type: 'numeric', name, property: name, access: 1, unit, label: name });
function devicesList(round: number): unknown[] {
  const out: unknown[] = [];
  for (let d = 0; d < DEVICES; d++) {
    const sensor = d % 2 === 0;
    const exposes = sensor
      ? [
          numeric('temperature', '°C'),
          numeric('humidity', '%'),
          numeric('pressure', 'hPa'),
          numeric('battery', '%'),
          { type: 'binary', name: 'occupancy', property: 'occupancy', access: 1, value_on: true, value_off: false },
        ]
      : [
          {
            type: 'switch',
            features: [{ type: 'binary', name: 'state', property: 'state', access: 7, value_on: 'ON', value_off: 'OFF', value_toggle: 'TOGGLE' }],
          },
          numeric('power', 'W'),
          numeric('energy', 'kWh'),
          numeric('voltage', 'V'),
          numeric('current', 'A'),
        ];
    out.push({
      ieee_address: `0x${(0x00124b0000000000n + BigInt(d)).toString(16).padStart(16, '0')}`,
      type: sensor ? 'EndDevice' : 'Router',
      supported: true,
      disabled: false,
      interview_completed: true,
      // A rename each round: the list really changes, so the tool set must be rebuilt.
      friendly_name: `${sensor ? 'Sensor' : 'Plug'} ${d}${round ? ` r${round}` : ''}`,
      power_source: sensor ? 'Battery' : 'Mains (single phase)',
      definition: { model: sensor ? 'SNZB-02' : 'ZBMINI', vendor: 'Bench', description: sensor ? 'Climate sensor' : 'Plug', exposes, supports_ota: false },
    });
  }
  return out;
}

async function run() {
  const broker = (await startBroker('mosquitto')) ?? (await startBroker('aedes'));
  if (!broker) throw new Error('no broker started');
  console.log(`  broker: ${broker.label}`);
  const dir = join(tmp.path, 'home');
  mkdirSync(join(dir, 'devices'), { recursive: true });
  const { config } = loadConfig({
    cwd: dir,
    env: {},
    flags: { 'mqtt.url': broker.url, 'devices.paths': [join(dir, 'devices')], demo: false, 'database.path': join(dir, 'hearth.db') },
  });
  const hearth = await Hearth.open({ config, log: silentLogger, connectWaitMs: 10_000 });
  const pub = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
  const rows: Array<{ round: number; entities: number; tools: number; bytes: number; parseMs: number; toToolsMs: number; delayP99: number; delayMax: number }> =
    [];
  try {
    for (let round = 0; round <= ROUNDS; round++) {
      const text = JSON.stringify(devicesList(round));
      // Baseline: reading the list at the least.
      const p0 = nowNs();
      JSON.parse(text);
      const parseMs = Number(nowNs() - p0) / 1e6;
      let arrived: bigint | undefined;
      const onMessage = (topic: string) => {
        if (topic === 'zigbee2mqtt/bridge/devices') arrived ??= nowNs();
      };
      // First in line: the arrival is when the connection hands the payload over.
      hearth.bridge.connection.prependListener('message', onMessage);
      const want = DEVICES * 5;
      const regenerated = new Promise<bigint>((resolve) => {
        const check = () => {
          const n = hearth.bridge.registry.entities().length;
          if (n >= want && hearth.bridge.registry.entities().some((e) => e.name.includes(round ? ` r${round}` : 'Sensor 0'))) {
            hearth.bridge.registry.off('changed', check);
            resolve(nowNs());
          }
        };
        // The tool set listened first and has regenerated by now (grouped tools may come out the same, and then it says nothing).
        hearth.bridge.registry.on('changed', check);
      });
      const h = monitorEventLoopDelay({ resolution: 1 });
      h.enable();
      await pub.publishAsync('zigbee2mqtt/bridge/devices', text, { qos: 1, retain: true });
      const done = await regenerated;
      // The loop-delay timer records a stall when it next runs: give it the chance.
      await new Promise((res) => setTimeout(res, 20));
      h.disable();
      hearth.bridge.connection.off('message', onMessage);
      const toToolsMs = Number(done - (arrived ?? done)) / 1e6;
      const r = {
        round,
        entities: hearth.bridge.registry.entities().length,
        tools: hearth.tools.all().length,
        bytes: text.length,
        parseMs,
        toToolsMs,
        delayP99: h.percentile(99) / 1e6,
        delayMax: h.max / 1e6,
      };
      if (round > 0) rows.push(r); // round 0 warms up (first list: every device new)
      console.log(`    .. round ${round}${round ? '' : ' (warm-up)'}: ${fmt(toToolsMs, 0)} ms to the tools, loop delay max ${fmt(r.delayMax, 0)} ms`);
      await new Promise((res) => setTimeout(res, 300));
    }
  } finally {
    await pub.endAsync(true).catch(() => undefined);
    await hearth.close();
    await broker.stop();
  }
  const med = (k: keyof (typeof rows)[number]) => median(rows.map((r) => r[k] as number));
  const maxStall = Math.max(...rows.map((r) => r.delayMax));
  console.log('');
  table(
    [
      'bridge/devices arrives (median of rounds)',
      'devices',
      'entities',
      'tools',
      'payload MiB',
      'ms',
      'vs JSON.parse',
      'loop delay p99 ms',
      'loop delay max ms',
    ],
    [
      ['baseline: JSON.parse of the list', DEVICES.toLocaleString('en-US'), '', '', fmt(rows[0]!.bytes / 2 ** 20, 1), fmt(med('parseMs'), 1), '', '', ''],
      [
        'Hearth: arrival -> tool set regenerated',
        DEVICES.toLocaleString('en-US'),
        rows[0]!.entities.toLocaleString('en-US'),
        String(rows[0]!.tools),
        '',
        fmt(med('toToolsMs'), 0),
        ratio(med('toToolsMs'), med('parseMs')),
        fmt(med('delayP99'), 1),
        fmt(maxStall, 1),
      ],
    ],
  );
  console.log(
    `TARGET big home, ${rows[0]!.entities.toLocaleString('en-US')} discovered entities: no event-loop stall over ${STALL_TARGET_MS} ms: ${maxStall <= STALL_TARGET_MS ? 'MET' : 'NOT MET'} (max ${fmt(maxStall, 1)} ms, p99 ${fmt(med('delayP99'), 1)} ms; ${fmt(med('toToolsMs'), 0)} ms to the tools)`,
  );
  const file = writeResults('bighomes', {
    bench: 'bighomes',
    startedAt,
    seconds: Math.round(secondsSince(t0) * 10) / 10,
    machine: machine(),
    config: { devices: DEVICES, rounds: ROUNDS, stallTargetMs: STALL_TARGET_MS },
    note: 'toToolsMs: from the bridge/devices payload reaching the Hearth connection to the tool set emitting changed with every entity; delay: perf_hooks.monitorEventLoopDelay over that window (ms). Each round renames every device so the list really changes.',
    rows,
    maxStallMs: maxStall,
    met: maxStall <= STALL_TARGET_MS,
  });
  console.log(`results: ${file} (${secondsSince(t0).toFixed(1)} s)`);
}

try {
  await run();
} finally {
  tmp.cleanup();
}
