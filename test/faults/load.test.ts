// Load: 50 concurrent agent sessions make 5,000 tool calls across 100
// devices, through the builtin engine (the model is a scripted
// OpenAI-compatible server: each turn asks for 10 actuator calls, then ends)
// and the real pipeline, on a real broker with an echoing device client.
// Every call must have exactly one audit row, the commands to each device must
// go out in the order their audit rows were written (and each session's in
// the order it asked), and nothing may end as an unhandled rejection.
//
// Replay: HEARTH_FUZZ_SEED=<seed from the test name> node --import tsx --test test/faults/load.test.ts
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { BuiltinEngine } from '../../src/agent/builtin-engine.js';
import { OpenAIProvider } from '../../src/agent/providers/openai.js';
import { SessionManager } from '../../src/agent/sessions.js';
import type { AgentEvent } from '../../src/agent/types.js';
import { loadConfig } from '../../src/config/load.js';
import { Hearth } from '../../src/hearth.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { Fuzz, fuzzSeed, hexSeed } from '../helpers/fuzz.js';
import { logSink } from '../helpers/log-sink.js';
import { startOpenAIServer, textChunks, toolCallChunks, type OpenAIServer } from '../helpers/openai-server.js';
import { waitFor } from '../helpers/wait.js';

const SEED = fuzzSeed(0x5eed_0004);
const SESSIONS = 50;
const TURNS = 10;
const CALLS_PER_TURN = 10;
const DEVICES = 100;
const TOTAL = SESSIONS * TURNS * CALLS_PER_TURN;

function deviceFile(): string {
  const lines = ['devices:'];
  for (let d = 0; d < DEVICES; d++) {
    lines.push(
      `  - id: dial${d}`,
      `    name: Load dial ${d}`,
      `    area: Room ${d % 10}`,
      '    entities:',
      `      value: { kind: number, state_topic: load/${d}/state, command_topic: load/${d}/set, min: 0, max: 1000000, step: 1 }`,
    );
  }
  return `${lines.join('\n')}\n`;
}

// Both ways audit rows reach the disk: one fsync per commit, and one shared by concurrent calls.
for (const durability of ['full', 'grouped'] as const) {
  describe(`load: ${SESSIONS} sessions x ${TURNS * CALLS_PER_TURN} calls over ${DEVICES} devices, through the builtin engine, audit.durability ${durability} (seed ${hexSeed(SEED)})`, () => {
    let broker: TestBroker;
    let hearth: Hearth;
    let server: OpenAIServer;
    let engine: BuiltinEngine;
    let sessions: SessionManager;
    let echo: MqttClient;
    let watcher: MqttClient;
    const dir = mkdtempSync(join(tmpdir(), 'hearth-load-'));
    const logs = logSink('warn');
    const seen: Array<{ topic: string; payload: string }> = [];
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    /** plan[s][t][k] = [device, value]: what session s asks in turn t, call k. The value is unique across the run. */
    const fz = new Fuzz(SEED);
    const plan = Array.from({ length: SESSIONS }, (_, s) =>
      Array.from({ length: TURNS }, (_, t) =>
        Array.from({ length: CALLS_PER_TURN }, (_, k) => [fz.int(0, DEVICES - 1), s * 1000 + t * CALLS_PER_TURN + k] as const),
      ),
    );

    before(async () => {
      process.on('unhandledRejection', onRejection);
      broker = await startAedes();
      mkdirSync(join(dir, 'devices'));
      writeFileSync(join(dir, 'devices', 'load.yaml'), deviceFile());
      const { config } = loadConfig({
        cwd: dir,
        env: {},
        flags: {
          'mqtt.url': broker.url,
          'devices.paths': [join(dir, 'devices')],
          demo: false,
          'database.path': join(dir, 'h.db'),
          'tools.shape': 'per-entity',
          'audit.durability': durability,
        },
      });
      hearth = await Hearth.open({ config, log: logs.log });
      hearth.policy.add({ subject: 'role:family', targetType: 'kind', target: 'number', action: 'actuate', effect: 'allow' });
      // The devices: one client that answers every command with the new state at once.
      echo = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
      (echo.stream as Socket).setNoDelay?.(true);
      echo.on('message', (topic, payload) => {
        echo.publish(topic.replace(/\/set$/, '/state'), payload, { qos: 0, retain: true });
      });
      await echo.subscribeAsync('load/+/set', { qos: 0 });
      for (let d = 0; d < DEVICES; d++) await echo.publishAsync(`load/${d}/state`, '0', { qos: 1, retain: true });
      watcher = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
      watcher.on('message', (topic, payload) => seen.push({ topic, payload: payload.toString() }));
      await watcher.subscribeAsync('#', { qos: 1 });
      await waitFor('every dial has a state', () => hearth.bridge.registry.entities().every((e) => hearth.bridge.cache.get(e.id)?.value !== undefined), 10_000);

      // The model: each user message asks for that turn's 10 calls; after the tool results it answers in text.
      server = await startOpenAIServer();
      server.setScript((body) => {
        const messages = body.messages as Array<{ role: string; content: string }>;
        const last = messages[messages.length - 1]!;
        if (last.role !== 'user') return { chunks: textChunks('done'), split: false };
        const m = /^load s=(\d+) t=(\d+)$/.exec(last.content);
        if (!m) return { status: 400, body: { error: { message: `unexpected prompt ${last.content}` } } };
        const [s, t] = [Number(m[1]), Number(m[2])];
        const calls = plan[s]![t]!.map(([d, value], k) => ({ id: `c${s}_${t}_${k}`, name: `host__load_dial_${d}`, arguments: { value } }));
        return { chunks: toolCallChunks(calls, { pieceSize: 64 }), split: false };
      });
      engine = await BuiltinEngine.start({
        provider: new OpenAIProvider({ baseUrl: server.url, apiKey: 'sk-test', model: 'test-model', timeoutMs: 30_000 }),
        db: hearth.db,
        maxRounds: 4,
        defaultSystemPrompt: () => 'load test',
      });
      sessions = new SessionManager(engine, hearth.tools);
    });
    after(async () => {
      process.off('unhandledRejection', onRejection);
      await engine?.close();
      await server?.close();
      await echo?.endAsync(true).catch(() => undefined);
      await watcher?.endAsync(true).catch(() => undefined);
      await hearth?.close();
      await broker?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it(`${TOTAL} calls: one audit row each, per-device order kept, every call confirmed, no unhandled rejection`, async (t) => {
      const rowsBefore = hearth.audit.tail(1)[0]?.id ?? 0;
      const seenBefore = seen.length;
      const started = Date.now();
      const results: Array<Extract<AgentEvent, { type: 'tool_result' }>> = [];
      const failures: string[] = [];
      const sessionIds: string[] = [];
      await Promise.all(
        Array.from({ length: SESSIONS }, async (_, s) => {
          const session = await sessions.open({ principal: { id: `chat:user${s}`, roles: ['family'] }, permissions: 'host' });
          sessionIds[s] = session.id;
          for (let turnNo = 0; turnNo < TURNS; turnNo++) {
            const turn = await sessions.prompt(session, `load s=${s} t=${turnNo}`);
            for await (const e of turn) {
              if (e.type === 'tool_result') results.push(e);
              if (e.type === 'error') failures.push(`session ${s} turn ${turnNo}: ${e.message}`);
            }
            const r = await turn.result();
            if (r.stopReason !== 'completed') failures.push(`session ${s} turn ${turnNo}: ${r.stopReason} ${r.error ?? ''}`);
          }
        }),
      );
      const seconds = (Date.now() - started) / 1000;
      t.diagnostic(`${TOTAL} calls in ${seconds.toFixed(1)} s (${Math.round(TOTAL / seconds)} calls/s), ${server.requests.length} model requests`);
      assert.deepEqual(failures, [], 'every turn completed');
      assert.equal(results.length, TOTAL, 'a result for every call');
      const notConfirmed = results.filter((r) => !/^confirmed: /.test(r.content));
      assert.deepEqual(
        notConfirmed.slice(0, 5).map((r) => r.content),
        [],
        `every call confirmed (${notConfirmed.length} not)`,
      );

      // Exactly one audit row per call, each confirmed, each naming its session and principal.
      const rows = hearth.audit.list({ afterId: rowsBefore, limit: 10_000 });
      assert.equal(rows.length, TOTAL, 'one audit row per call');
      assert.equal(new Set(rows.map((r) => r.requestId)).size, TOTAL, 'distinct request ids');
      assert.ok(
        rows.every((r) => r.outcome === 'confirmed'),
        'every row confirmed',
      );
      const bySession = new Map<string, number>();
      for (const r of rows) bySession.set(r.session ?? '', (bySession.get(r.session ?? '') ?? 0) + 1);
      for (const [s, id] of sessionIds.entries()) assert.equal(bySession.get(id), TURNS * CALLS_PER_TURN, `session ${s} has all its rows`);
      for (const r of rows) assert.equal(r.principal, `chat:user${Math.floor(Number(r.args.value) / 1000)}`, `row ${r.id} names its caller`);

      // Per device: the commands on the broker are the audit rows' commands, in the same order,
      // each followed by its echo before the next one went out.
      await waitFor('every command seen by the watcher', () => seen.slice(seenBefore).filter((m) => m.topic.endsWith('/set')).length >= TOTAL, 10_000);
      const mine = seen.slice(seenBefore);
      for (let d = 0; d < DEVICES; d++) {
        const onBroker = mine.filter((m) => m.topic === `load/${d}/set`).map((m) => Number(m.payload));
        const audited = rows.filter((r) => r.entityId === `dial${d}.value`).map((r) => Number(r.args.value));
        assert.deepEqual(onBroker, audited, `device ${d}: broker order = audit order`);
        const expected = plan.flatMap((turns) => turns.flat()).filter(([dev]) => dev === d).length;
        assert.equal(onBroker.length, expected, `device ${d}: every planned call reached it once`);
        // A session's calls to this device went out in the order the session made them.
        const perSession = new Map<number, number[]>();
        for (const v of onBroker) perSession.set(Math.floor(v / 1000), [...(perSession.get(Math.floor(v / 1000)) ?? []), v]);
        for (const [s, values] of perSession)
          assert.deepEqual(
            values,
            [...values].sort((a, b) => a - b),
            `device ${d}, session ${s}: in order`,
          );
        const stream = mine.filter((m) => m.topic === `load/${d}/set` || m.topic === `load/${d}/state`);
        for (let i = 0, lastSet = -1; i < stream.length; i++) {
          if (!stream[i]!.topic.endsWith('/set')) continue;
          if (lastSet >= 0) {
            const between = stream.slice(lastSet + 1, i);
            assert.ok(
              between.some((m) => m.topic.endsWith('/state') && m.payload === stream[lastSet]!.payload),
              `device ${d}: the echo of ${stream[lastSet]!.payload} came before the next command`,
            );
          }
          lastSet = i;
        }
      }
      assert.equal(hearth.audit.verify().ok, true, 'the chain verifies');
      assert.deepEqual(
        logs.lines.filter((l) => l.level >= 50).map((l) => l.msg),
        [],
        'nothing logged as an error',
      );
      assert.deepEqual(rejections, [], 'no unhandled rejection');
    });
  });
}
