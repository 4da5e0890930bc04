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
import { isSensor, zigbee2mqttDevice } from './lib/zigbee2mqtt-list.js';

const DEVICES = envInt('BENCH_BIGHOME_DEVICES', 2000);
const ROUNDS = envInt('BENCH_BIGHOME_ROUNDS', 3);
const STALL_TARGET_MS = 100;
const tmp = tempDir('hearth-bench-bighome');
const startedAt = new Date().toISOString();
const t0 = nowNs();

console.log(
  `bighomes: Node ${process.version}, ${machine().cpus} cores; a Zigbee2MQTT bridge/devices list of ${DEVICES.toLocaleString('en-US')} devices arriving at a running Hearth, ${ROUNDS} rounds\n`,
);

function devicesList(round: number): unknown[] {
  const out: unknown[] = [];
  // The sensors renamed each round: the list really changes, so the tool set must be rebuilt. (Not the plugs: a device
  // that takes commands waits for its owner to confirm a rename, as a forged one looks the same: docs/your-home.md.)
  for (let d = 0; d < DEVICES; d++) out.push(zigbee2mqttDevice(d, isSensor(d) ? `Sensor ${d}${round ? ` r${round}` : ''}` : `Plug ${d}`));
  return out;
}

const stageRounds: Array<Record<string, { cpu: number; wall: number }>> = [];

/**
 * Times in place, per round, what runs between the list's arrival and the tools: the adapter's parse of the
 * list (its own turn), each slice of the conversion, the hand-over to the registry (duplicates, report; the
 * signature; the admission), the registry's stages (each its own turn: the home model's apply; ranks and read
 * topics; topic owners; names and indexes; the state cache's routes built; the swap with each listener of its
 * change: the state cache, the tool set, ...; the command topics remembered), by CPU and wall time.
 */
function timeStages(hearth: Hearth): { reset(): void; take(): Record<string, { cpu: number; wall: number }> } {
  let acc: Record<string, { cpu: number; wall: number }> = {};
  const cpuMs = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const add = (label: string, cpu: number, wall: number) => {
    const a = (acc[label] ??= { cpu: 0, wall: 0 });
    a.cpu += cpu;
    a.wall += wall;
  };
  const wrap = (obj: object, method: string, label: string, max?: boolean) => {
    const target = obj as Record<string, (...a: unknown[]) => unknown>;
    const fn = target[method]!;
    target[method] = function (this: unknown, ...a: unknown[]) {
      const c0 = cpuMs();
      const w0 = performance.now();
      try {
        return fn.apply(this, a);
      } finally {
        const cpu = cpuMs() - c0;
        const wall = performance.now() - w0;
        if (max) {
          // The longest one (slices): that is what one turn holds.
          const a2 = (acc[label] ??= { cpu: 0, wall: 0 });
          a2.cpu = Math.max(a2.cpu, cpu);
          a2.wall = Math.max(a2.wall, wall);
        } else add(label, cpu, wall);
      }
    };
  };
  const adapter = hearth.bridge.adapters.find((a) => a.name === 'zigbee2mqtt');
  if (adapter) {
    wrap(adapter, 'onDevices', 'adapter: parse the list (bounded JSON), start converting');
    // rebuild()'s slices run convertDevice in a closure: the slice is timed through setImmediate below.
    wrap(adapter, 'apply', 'adapter: hand-over (duplicates, report)');
    wrap(adapter, 'admit', 'adapter: signature JSON');
    wrap(adapter, 'handOver', 'adapter: admission (discovered.ts)');
  }
  const registry = hearth.bridge.registry;
  wrap(registry.home, 'apply', 'registry: home model apply()');
  // A big list is worked out over turns (setSourceInTurns): each stage is one turn; a small change rebuilds at once.
  wrap(registry, 'place', 'registry turn 1: place (home model apply)');
  wrap(registry, 'rank', 'registry turn 2: rank (first seen), read topics');
  wrap(registry, 'own', 'registry turn 3: command topic owners');
  wrap(registry, 'name', 'registry turn 4: names told apart, indexes');
  wrap(hearth.bridge.cache, 'prepare', "registry turn 5: preparing (the state cache's routes)");
  wrap(registry, 'commit', 'registry turn 6: swap in and announce (the listeners below)');
  wrap(registry, 'rememberNow', 'registry turn 7: remember the command topics (SQLite)');
  wrap(registry, 'rebuild', 'registry: rebuild at once (a small change; not expected here)');
  const listeners = registry.listeners('changed') as Array<(...a: unknown[]) => void>;
  registry.removeAllListeners('changed');
  for (const [i, l] of listeners.entries()) {
    const holder = { l };
    const text = String(l).replace(/\s+/g, ' ').slice(0, 48);
    wrap(holder, 'l', `registry change listener ${i}: ${text}`);
    registry.on('changed', holder.l);
  }
  // The longest turn that setImmediate ran (the conversion's slices and the hand-over's own turn).
  const realSetImmediate = globalThis.setImmediate;
  globalThis.setImmediate = ((cb: (...a: unknown[]) => void, ...args: unknown[]) => {
    const holder = { cb };
    wrap(holder, 'cb', 'longest setImmediate turn (a conversion slice, a hand-over or registry stage)', true);
    return realSetImmediate(holder.cb, ...args);
  }) as typeof setImmediate;
  return {
    reset() {
      acc = {};
    },
    take() {
      const out = acc;
      acc = {};
      return out;
    },
  };
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
  const where = timeStages(hearth);
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
      where.reset();
      h.enable();
      await pub.publishAsync('zigbee2mqtt/bridge/devices', text, { qos: 1, retain: true });
      // Bounded: a list the registry does not follow is a finding, not a hang.
      let timer: NodeJS.Timeout | undefined;
      const done = await Promise.race([
        regenerated,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`round ${round}: the devices of the list did not all arrive within 120 s`)), 120_000);
        }),
      ]).finally(() => clearTimeout(timer));
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
      if (round > 0) {
        rows.push(r); // round 0 warms up (first list: every device new)
        stageRounds.push(where.take());
      }
      console.log(`    .. round ${round}${round ? '' : ' (warm-up)'}: ${fmt(toToolsMs, 0)} ms to the tools, loop delay max ${fmt(r.delayMax, 0)} ms`);
      await new Promise((res) => setTimeout(res, 300));
    }
  } finally {
    await pub.endAsync(true).catch(() => undefined);
    await hearth.close();
    await broker.stop();
  }
  const med = (k: keyof (typeof rows)[number]) => median(rows.map((r) => r[k] as number));
  // Where the stall goes, in CPU time of this process (a busy machine stretches wall time, hardly CPU time).
  console.log('\n  what runs in the window, CPU ms (median of rounds; one turn of the event loop each unless said)');
  const labels = [...new Set(stageRounds.flatMap((s) => Object.keys(s)))];
  table(
    ['stage', 'CPU ms', 'wall ms'],
    labels.map((l) => [l, fmt(median(stageRounds.map((s) => s[l]?.cpu ?? 0)), 1), fmt(median(stageRounds.map((s) => s[l]?.wall ?? 0)), 1)]),
  );
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
    stages: stageRounds,
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
