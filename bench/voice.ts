// Voice latency: from a Wyoming `transcript` leaving the client to its
// `handled` arriving back, with the offline intent model on the demo home
// (the simulator echoes every command, so an actuation waits for the device's
// confirmation, as it does in a real home). Baseline in the same run: a raw
// TCP echo of the same bytes on loopback, through the same kind of socket.
// Target (issue 23): p95 under 300 ms. No timing is asserted anywhere.
//
//   node --import tsx bench/voice.ts
//   BENCH_VOICE_TURNS=100 BENCH_VOICE_WARMUP=10 node --import tsx bench/voice.ts
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { DEMO_DEVICES } from '../src/bridge.js';
import { loadConfig } from '../src/config/load.js';
import { Hearth } from '../src/hearth.js';
import { silentLogger } from '../src/log.js';
import { startSimulator } from '../src/simulator/simulator.js';
import { encodeEvent, FrameReader, type WyomingEvent } from '../src/wyoming/framing.js';
import { WyomingServer } from '../src/wyoming/server.js';
import { envInt, fmt, machine, nowNs, ratio, startBroker, summarize, table, tempDir, writeResults } from './lib/harness.js';

const TURNS = envInt('BENCH_VOICE_TURNS', 400);
const WARMUP = envInt('BENCH_VOICE_WARMUP', 40);
const TARGET_P95_MS = 300;

// What people say to a satellite: actuations (confirmed by the simulated device) and questions.
const UTTERANCES: Array<{ text: string; kind: 'actuate' | 'question' }> = [
  { text: 'turn on the living room lamp', kind: 'actuate' },
  { text: 'turn off the living room lamp', kind: 'actuate' },
  { text: 'turn on the kitchen light', kind: 'actuate' },
  { text: 'turn off the kitchen light', kind: 'actuate' },
  { text: 'is the living room lamp on?', kind: 'question' },
  { text: 'what is the temperature in the living room?', kind: 'question' },
];

/** p95, nearest rank (the harness summary stops at p90 and p99). */
function p95(samples: number[]): number {
  const s = [...samples].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(0.95 * s.length) - 1))] ?? NaN;
}

/** One Wyoming connection that sends an event and waits for the next one. */
class Client {
  private readonly reader = new FrameReader();
  private waiting?: (e: WyomingEvent) => void;
  private constructor(private readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => {
      for (const e of this.reader.push(chunk)) this.waiting?.(e);
    });
  }
  static open(port: number): Promise<Client> {
    return new Promise((resolve, reject) => {
      const s = connect({ port, host: '127.0.0.1' }, () => resolve(new Client(s)));
      s.once('error', reject);
    });
  }
  ask(bytes: Buffer): Promise<WyomingEvent> {
    return new Promise((resolve) => {
      this.waiting = resolve;
      this.socket.write(bytes);
    });
  }
  close(): void {
    this.socket.destroy();
  }
}

/** The baseline: a server that answers each frame with a fixed `handled` frame, no work in between. */
async function echoServer(): Promise<{ port: number; close(): Promise<void> }> {
  const answer = encodeEvent({ type: 'handled', data: { text: 'The living room lamp is on.' } });
  const server = createServer((socket) => {
    socket.setNoDelay(true);
    const reader = new FrameReader();
    socket.on('data', (chunk: Buffer) => {
      for (const _ of reader.push(chunk)) socket.write(answer);
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function main(): Promise<void> {
  console.log(`voice: ${TURNS} transcripts (${WARMUP} warm-up), offline intent model, demo home, aedes in its own process`);
  const tmp = tempDir('hearth-bench-voice');
  const broker = await startBroker('aedes');
  if (!broker) throw new Error('aedes did not start');
  const devices = join(tmp.path, 'devices');
  mkdirSync(devices);
  for (const f of readdirSync(DEMO_DEVICES)) writeFileSync(join(devices, f), readFileSync(join(DEMO_DEVICES, f), 'utf8'));
  const { config } = loadConfig({
    cwd: tmp.path,
    env: {},
    flags: {
      'mqtt.url': broker.url,
      'mqtt.protocolVersion': '4',
      'devices.paths': [devices],
      demo: false,
      'database.path': join(tmp.path, 'hearth.db'),
      'tools.shape': 'per-entity',
    },
  });
  const hearth = await Hearth.open({ config, log: silentLogger, connectWaitMs: 10_000 });
  const sim = await startSimulator({ url: broker.url, devices: hearth.bridge.registry.devices(), log: silentLogger });
  hearth.policy.add({ subject: 'role:owner', targetType: 'any', action: 'actuate', effect: 'allow', note: 'bench: owners act' });
  hearth.policy.setRoles('voice:bench', ['owner']);
  await hearth.bridge.settle(5000);
  const wy = await WyomingServer.start({ hearth, port: 0, satellites: [{ name: 'bench', address: '127.0.0.1', area: 'Living room' }], log: silentLogger });
  const echo = await echoServer();
  const frames = UTTERANCES.map((u) => encodeEvent({ type: 'transcript', data: { text: u.text } }));
  try {
    const voice = await Client.open(wy.port);
    const raw = await Client.open(echo.port);
    let notHandled = 0;
    const samples = { echo: [] as number[], voice: [] as number[], actuate: [] as number[], question: [] as number[] };
    // Interleaved: each transcript is measured right after an echo of the same bytes.
    for (let i = 0; i < WARMUP + TURNS; i++) {
      const k = i % UTTERANCES.length;
      const e0 = nowNs();
      await raw.ask(frames[k]!);
      const echoMs = Number(nowNs() - e0) / 1e6;
      const v0 = nowNs();
      const answer = await voice.ask(frames[k]!);
      const voiceMs = Number(nowNs() - v0) / 1e6;
      if (answer.type !== 'handled') {
        notHandled++;
        if (notHandled <= 3) console.log(`    ! ${UTTERANCES[k]!.text}: ${answer.type} ${JSON.stringify(answer.data).slice(0, 160)}`);
      }
      if (i < WARMUP) continue;
      samples.echo.push(echoMs);
      samples.voice.push(voiceMs);
      samples[UTTERANCES[k]!.kind].push(voiceMs);
    }
    voice.close();
    raw.close();

    const row = (label: string, s: number[]) => {
      const sum = summarize(s);
      return [label, String(sum.count), fmt(sum.p50, 3), fmt(sum.p90, 3), fmt(p95(s), 3), fmt(sum.p99, 3), fmt(sum.max, 3)];
    };
    console.log('\n  transcript -> handled, ms');
    table(
      ['side', 'n', 'p50', 'p90', 'p95', 'p99', 'max'],
      [
        row('raw TCP echo (baseline)', samples.echo),
        row('Hearth over Wyoming, all', samples.voice),
        row('  actuations (confirmed)', samples.actuate),
        row('  questions (reads)', samples.question),
      ],
    );
    const voiceP95 = p95(samples.voice);
    const echoP95 = p95(samples.echo);
    console.log(
      `\n  p95 ${fmt(voiceP95, 3)} ms = ${ratio(voiceP95, echoP95)} the raw echo's p95 (${fmt(echoP95, 3)} ms); ` +
        `target p95 < ${TARGET_P95_MS} ms -> ${voiceP95 < TARGET_P95_MS ? 'MET' : 'NOT MET'}; not handled: ${notHandled}`,
    );
    const file = writeResults('voice', {
      machine: machine(),
      turns: TURNS,
      warmup: WARMUP,
      utterances: UTTERANCES,
      echo: { ...summarize(samples.echo), p95: echoP95 },
      voice: { ...summarize(samples.voice), p95: voiceP95 },
      actuate: { ...summarize(samples.actuate), p95: p95(samples.actuate) },
      question: { ...summarize(samples.question), p95: p95(samples.question) },
      notHandled,
      target: { p95Ms: TARGET_P95_MS, met: voiceP95 < TARGET_P95_MS },
    });
    console.log(`  results: ${file}`);
  } finally {
    await wy.close();
    await echo.close();
    await sim.close();
    await hearth.close();
    await broker.stop();
    tmp.cleanup();
  }
}

await main();
