// Fuzzed tool calls, seeded and reproducible, through the real pipeline on a
// real broker with the simulator: every tool of both shapes with random and
// mutated arguments (wrong types, huge strings, NaN, `#` `+` `$` in strings,
// unknown fields), random principals and random tool names. The process
// survives, every refusal has a reason, every actuator call has exactly one
// audit row, and nothing but a real command topic of the called entity is
// ever published (a spy on the bridge's own client, and a `#` watcher).
//
// Replay a failure: HEARTH_FUZZ_SEED=<seed from the test name> node --import tsx --test test/faults/fuzz-tools.test.ts
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { DEMO_DEVICES } from '../../src/bridge.js';
import { loadConfig } from '../../src/config/load.js';
import { commandTopicsOf } from '../../src/devices/commands.js';
import { Hearth } from '../../src/hearth.js';
import { isPublishableTopic } from '../../src/mqtt/topic.js';
import { startSimulator, type Simulator } from '../../src/simulator/simulator.js';
import { newCall } from '../../src/tools/pipeline.js';
import { normalizeResult } from '../../src/tools/tool-set.js';
import type { GeneratedTool, Principal, ToolResultObject } from '../../src/tools/types.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { Fuzz, fuzzSeed, hexSeed } from '../helpers/fuzz.js';
import { OWNER } from '../helpers/home.js';
import { logSink } from '../helpers/log-sink.js';

const SEED = fuzzSeed(0x5eed_0002);
/** The call a row belongs to: a grouped call's member rows are `<request id>#<entity id>`. */
const baseId = (requestId: string) => requestId.replace(/#.*$/s, '');
const ARG_CALLS = 3000;
const PRINCIPAL_CALLS = 1500;
const NAME_CALLS = 1500;
const CONCURRENCY = 8;

/** Kinds the demo home lacks, so that every argument shape is fuzzed. */
const EXTRA = `
devices:
  - id: fz_dial
    name: Fuzz dial
    area: Study
    entities:
      dial: { kind: number, state_topic: fz/dial, command_topic: fz/dial/set, ranges: { value: { min: -5, max: 10.5 } } }
      level: { kind: number, state_topic: fz/level, command_topic: fz/level/set, min: 0, max: 100, step: 5 }
  - id: fz_mode
    name: Fuzz mode
    area: Study
    entities:
      mode: { kind: select, state_topic: fz/mode, command_topic: fz/mode/set, options: [eco, comfort plus, "night/#", "+"] }
  - id: fz_fan
    name: Fuzz fan
    area: Attic
    entities:
      fan:
        kind: fan
        state_topic: fz/fan
        value_path: state
        attributes: { percentage: percentage, preset_mode: preset }
        command_topic: fz/fan/set
        command_format: json
        options: { preset_mode: [eco, boost] }
  - id: fz_valve
    name: Fuzz valve
    area: Garden
    entities:
      valve:
        kind: valve
        state_topic: fz/valve
        attributes: { position: { topic: fz/valve/position } }
        command_topic: fz/valve/set
        command_topics: { position: fz/valve/position/set }
        simulate: { travel_ms: 50 }
  - id: fz_alarm
    name: Fuzz alarm
    area: Hallway
    entities:
      panel: { kind: alarm_control_panel, state_topic: fz/alarm, command_topic: fz/alarm/set, simulate: { travel_ms: 20 } }
  - id: fz_bell
    name: Fuzz bell
    area: Hallway
    entities:
      bell: { kind: button, command_topic: fz/bell/press }
  - id: fz_plain_light
    name: Fuzz plain light
    area: Study
    entities:
      light: { kind: light, state_topic: fz/plain_light, command_topic: fz/plain_light/set }
`;

/** Ways a refusal may begin: each names what was wrong. */
const REASON =
  /^(invalid arguments: |unknown (tool|entity|camera) |not allowed|needs approval: |failed: |refused: |no entities in area |"[^"]*" is an? [a-z_]+, not an? |"[^"]*" has not sent a frame yet|cancelled )/;

interface Outcome {
  tool: GeneratedTool;
  args: unknown;
  result: ToolResultObject;
}

function checkResult(o: Outcome): void {
  const what = `${o.tool.name}(${JSON.stringify(o.args)?.slice(0, 200)}) -> ${JSON.stringify(o.result.text)?.slice(0, 300)}`;
  assert.equal(typeof o.result.text, 'string', what);
  assert.ok(!/\[object Object\]|failed unexpectedly|: undefined\b/.test(o.result.text!.slice(0, 400)), what);
  if (o.result.isError) {
    assert.match(o.result.text!, REASON, what);
    assert.ok(o.result.text!.length > 12, `a refusal says why: ${what}`);
  } else {
    // A grouped call (control_group) may also be done in part, or answered from its earlier rows; the audit and the
    // policy answer with their own heads (get_audit, explain_policy).
    assert.match(
      o.result.text!,
      /^(confirmed|unconfirmed|partly done: |already handled: |no matching entities|"|Latest frame|Audit |Policy for |[a-z0-9_.]+: ")/,
      what,
    );
  }
  const published = (o.result.details?.published as Array<{ topic: string; payload: string }> | undefined) ?? [];
  if (published.length) {
    const entity = String(o.result.details!.entity);
    assert.ok(o.tool.meta.entityIds.includes(entity), `the command went to an entity of the tool: ${what}`);
  }
  for (const m of published) {
    assert.ok(isPublishableTopic(m.topic), `published to ${JSON.stringify(m.topic)}: ${what}`);
    assert.ok(m.payload.length > 0 && !/NaN|Infinity|undefined|\[object/.test(m.payload), `payload ${JSON.stringify(m.payload)}: ${what}`);
  }
}

/** Run `n` jobs with at most `k` at a time; the first failure stops the rest, and is thrown once every job in flight has ended. */
async function pool(n: number, k: number, job: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  let failed = false;
  const settled = await Promise.allSettled(
    Array.from({ length: k }, async () => {
      while (next < n && !failed) {
        try {
          await job(next++);
        } catch (err) {
          failed = true;
          throw err;
        }
      }
    }),
  );
  const first = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (first) throw first.reason;
}

describe(`fuzzed tool calls (seed ${hexSeed(SEED)})`, () => {
  let broker: TestBroker;
  let hearth: Hearth;
  let sim: Simulator;
  let watcher: MqttClient;
  const dir = mkdtempSync(join(tmpdir(), 'hearth-fuzz-tools-'));
  const logs = logSink('warn');
  /** Every topic the bridge's own client published to, and every non-retained message on the broker. */
  const own: string[] = [];
  const seen: Array<{ topic: string; payload: string }> = [];
  const rejections: unknown[] = [];
  const onRejection = (reason: unknown) => rejections.push(reason);
  let commandTopics: Set<string>;
  let perEntity: GeneratedTool[];
  let grouped: GeneratedTool[];

  const run = async (tool: GeneratedTool, args: unknown, principal: Principal): Promise<Outcome> => {
    const result = normalizeResult(await tool.handler(args as Record<string, unknown>, newCall(principal, tool.name)));
    return { tool, args, result };
  };

  before(async () => {
    process.on('unhandledRejection', onRejection);
    broker = await startAedes();
    const devices = join(dir, 'devices');
    cpSync(DEMO_DEVICES, devices, { recursive: true });
    for (const f of readdirSync(devices)) {
      writeFileSync(join(devices, f), readFileSync(join(devices, f), 'utf8').replace(/travel_ms: \d+/g, 'travel_ms: 50'));
    }
    writeFileSync(join(devices, 'fuzz-extra.yaml'), EXTRA);
    const { config } = loadConfig({
      cwd: dir,
      env: {},
      flags: { 'mqtt.url': broker.url, 'devices.paths': [devices], demo: false, 'database.path': join(dir, 'h.db'), 'tools.shape': 'per-entity' },
    });
    hearth = await Hearth.open({ config, log: logs.log });
    assert.deepEqual(hearth.bridge.deviceProblems, []);
    hearth.policy.add({ subject: 'role:owner', targetType: 'any', target: '*', action: 'actuate', effect: 'allow', note: 'test: owners act' });
    sim = await startSimulator({ url: broker.url, devices: hearth.bridge.registry.devices(), log: logSink('warn').log });
    await hearth.bridge.settle(5000);
    watcher = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    watcher.on('message', (topic, payload, packet) => {
      if (!packet.retain) seen.push({ topic, payload: payload.toString() });
    });
    await watcher.subscribeAsync('#', { qos: 1 });
    const client = hearth.bridge.connection.client;
    const publish = client.publish.bind(client) as (...a: unknown[]) => unknown;
    (client as unknown as { publish: (...a: unknown[]) => unknown }).publish = (topic: unknown, ...rest: unknown[]) => {
      own.push(String(topic));
      return publish(topic, ...rest);
    };
    commandTopics = new Set(hearth.bridge.registry.entities().flatMap(commandTopicsOf));
    perEntity = hearth.tools.all();
    grouped = hearth.toolsInShape('grouped');
    assert.ok(perEntity.length >= 17 && grouped.length >= 10, `${perEntity.length} per-entity and ${grouped.length} grouped tools`);
  });
  after(async () => {
    process.off('unhandledRejection', onRejection);
    await watcher?.endAsync(true).catch(() => undefined);
    await sim?.close().catch(() => undefined);
    await hearth?.close();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`${ARG_CALLS} calls with fuzzed arguments to every tool of both shapes: a reason for every refusal, one audit row per actuator call`, async (t) => {
    const fz = new Fuzz(SEED);
    const tools = [...perEntity, ...grouped];
    const rowsBefore = hearth.audit.tail(1)[0]?.id ?? 0;
    const seenBefore = seen.length;
    const ownBefore = own.length;
    let actuatorCalls = 0;
    let confirmed = 0;
    let refused = 0;
    const plan = Array.from({ length: ARG_CALLS }, (_, i) => {
      // Every tool at least a few times, then at random.
      const tool = i < tools.length * 3 ? tools[i % tools.length]! : fz.pick(tools);
      return { tool, args: fz.args(tool.parameters) };
    });
    await pool(plan.length, CONCURRENCY, async (i) => {
      const { tool, args } = plan[i]!;
      if (tool.capability === 'actuator') actuatorCalls++;
      const o = await run(tool, args, OWNER);
      checkResult(o);
      if (o.result.isError) refused++;
      else if (/^confirmed/.test(o.result.text!)) confirmed++;
    });
    t.diagnostic(`${confirmed} confirmed, ${refused} refused, ${actuatorCalls} actuator calls`);
    assert.ok(confirmed > 100 && refused > ARG_CALLS / 3, 'the fuzz reached both the devices and the checks');

    const rows = hearth.audit.list({ afterId: rowsBefore, limit: 100_000 });
    // A grouped call's members have rows of their own, `<request id>#<entity>`: one call, one request id before the `#`.
    assert.equal(new Set(rows.map((r) => baseId(r.requestId))).size, actuatorCalls, 'one audit row per actuator call (or per member of a grouped one)');
    assert.equal(new Set(rows.map((r) => r.requestId)).size, rows.length);
    assert.ok(
      rows.every((r) => r.outcome !== 'pending'),
      'every row completed',
    );
    for (const r of rows.filter((x) => x.outcome === 'failed' || x.outcome === 'denied')) assert.ok(String(r.error ?? '').length > 5, `row ${r.id} says why`);
    assert.equal(hearth.audit.verify().ok, true, 'the chain verifies');

    for (const topic of own.slice(ownBefore)) assert.ok(commandTopics.has(topic), `the bridge published only to command topics, not ${JSON.stringify(topic)}`);
    for (const m of seen.slice(seenBefore)) assert.ok(isPublishableTopic(m.topic), `no wildcard on the broker: ${JSON.stringify(m.topic)}`);
    assert.deepEqual(
      logs.lines.filter((l) => l.level >= 50).map((l) => `${l.msg}: ${String((l.err as { message?: string } | undefined)?.message).slice(0, 200)}`),
      [],
      'nothing went wrong inside (no unexpected throw, every audit row written)',
    );
    assert.deepEqual(rejections, [], 'no unhandled rejection');
  });

  it(`${PRINCIPAL_CALLS} valid actuator calls by fuzzed principals without the owner role: none is allowed, nothing is published`, async () => {
    const fz = new Fuzz(SEED ^ 0x9e1);
    const actuators = [...perEntity, ...grouped].filter((x) => x.capability === 'actuator');
    const rowsBefore = hearth.audit.tail(1)[0]?.id ?? 0;
    const ownBefore = own.length;
    const callers: string[] = [];
    await pool(PRINCIPAL_CALLS, CONCURRENCY, async () => {
      const tool = fz.pick(actuators);
      const principal = fz.principal(false);
      callers.push(principal.id);
      const o = await run(tool, fz.validFor(tool.parameters), principal);
      checkResult(o);
      assert.equal(o.result.isError, true, `${JSON.stringify(principal)} must not act: ${o.result.text}`);
      assert.match(o.result.text!, /^(not allowed: |invalid arguments: |unknown entity |needs approval: )/, o.result.text);
    });
    assert.deepEqual(own.slice(ownBefore), [], 'nothing was published');
    const all = hearth.audit.list({ afterId: rowsBefore, limit: 100_000 });
    assert.ok(all.every((r) => r.outcome === 'denied' || r.outcome === 'failed'));
    // One row per call: a grouped call's members share its request id before the `#`.
    const rows = [...new Map(all.map((r) => [baseId(r.requestId), r])).values()];
    assert.equal(rows.length, PRINCIPAL_CALLS, 'every refused actuator call has its audit row');
    // SQLite keeps UTF-8: an ill-formed id (a lone surrogate) is stored with U+FFFD in its place, as any UTF-8 store would.
    const asStored = (id: string) => Buffer.from(id, 'utf8').toString('utf8');
    assert.deepEqual(rows.map((r) => r.principal).sort(), callers.map(asStored).sort(), 'each row names its caller');
    assert.deepEqual(rejections, []);
  });

  it(`${NAME_CALLS} calls by fuzzed tool names: unknown names are refused with the name, never resolved to another tool`, async () => {
    const fz = new Fuzz(SEED ^ 0x7001);
    const known = perEntity.map((x) => x.name);
    const ownBefore = own.length;
    for (let i = 0; i < NAME_CALLS; i++) {
      const name = fz.toolName(known);
      const args = fz.bool(0.5) ? fz.object() : {};
      const res = await hearth.tools.call(name, args, fz.principal(false));
      const target = hearth.tools.get(name);
      if (!target) {
        assert.equal(res.isError, true);
        assert.match(res.text!, /^unknown tool ".*"; list them with `hearth tools`$/s, JSON.stringify(name));
      } else {
        assert.ok(name === target.name || name === `host__${target.name}`, `${JSON.stringify(name)} resolved to ${target.name}`);
        assert.ok(typeof res.text === 'string' && res.text.length > 0);
      }
    }
    assert.deepEqual(own.slice(ownBefore), [], 'nothing was published');
    assert.deepEqual(rejections, []);
    // Still working after all of it.
    assert.match((await hearth.tools.call('living_room_lamp', { action: 'turn_on' }, OWNER)).text!, /^confirmed/);
  });
});
