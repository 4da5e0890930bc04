// Replays every case of test/fixtures/ha-discovery (117 discovery payloads
// with Home Assistant's own outcome, and 28 state messages) through a real
// broker (aedes, in-process) and the real Bridge with its Home Assistant
// discovery adapter, and checks that Hearth agrees with Home Assistant:
//   accept -> the entity/entities appear (no-kind platforms: accepted, logged)
//   reject -> nothing appears or changes, and a log line says why
//   remove -> what the earlier config created is gone
// then the state messages: the entity's state matches `expect_value` in
// Hearth's terms (HA `unknown` = no value yet while available, `unavailable`
// = not available, numbers as rendered, light/climate attribute objects).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import mqtt, { type MqttClient } from 'mqtt';
import { Bridge } from '../../src/bridge.js';
import { loadConfig } from '../../src/config/load.js';
import type { HomeAssistantDiscovery, ProcessedEvent } from '../../src/devices/discovery/homeassistant/adapter.js';
import type { Entity } from '../../src/devices/model.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { logSink, type LogLine } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';

// The cases live in the repository (test/fixtures/ha-discovery, copied from the project's shared fixtures with
// their public sources), so a fresh clone needs nothing beside it.
const FIXTURES = fileURLToPath(new URL('../fixtures/ha-discovery/', import.meta.url));

interface Case {
  file: string;
  source: string;
  topic: string;
  payload: unknown;
  expect: 'accept' | 'reject' | 'remove';
  component: string;
  notes: string;
  requires?: string[];
  discovery_prefix?: string;
}

interface StateCase {
  file: string;
  case: string;
  topic: string;
  payload: unknown;
  expect_value: unknown;
  notes: string;
  step?: number;
}

const files = readdirSync(FIXTURES)
  .filter((f) => f.endsWith('.json'))
  .sort();
const cases = new Map<string, Case>(
  files.filter((f) => !f.startsWith('state-')).map((f) => [f, { file: f, ...JSON.parse(readFileSync(join(FIXTURES, f), 'utf8')) } as Case]),
);
const states: StateCase[] = files
  .filter((f) => f.startsWith('state-'))
  .map((f) => ({ file: f, ...JSON.parse(readFileSync(join(FIXTURES, f), 'utf8')) }) as StateCase)
  .sort((a, b) => a.case.localeCompare(b.case) || (a.step ?? 0) - (b.step ?? 0));

/**
 * Cases Home Assistant accepts and Hearth refuses on purpose: Hearth never publishes on a topic it reads
 * (state and command on one topic: the command would be read back as the device's state) nor on a source's
 * control topic (Zigbee2MQTT's own bridge/request/* entities: permit join, restart, log level).
 */
const REFUSED_ON_PURPOSE: Record<string, RegExp> = {
  'core-alarm_control_panel-2.json': /is the state topic of/,
  'core-lock-1.json': /is the state topic of/,
  'core-number-1.json': /is the state topic of/,
  'core-select-1.json': /is the state topic of/,
  'z2m-button-1.json': /is a Zigbee2MQTT bridge topic/,
  'z2m-select-1.json': /is a Zigbee2MQTT bridge topic/,
  'z2m-switch-2.json': /is a Zigbee2MQTT bridge topic/,
};

const wire = (payload: unknown): Buffer => Buffer.from(typeof payload === 'string' ? payload : JSON.stringify(payload), 'utf8');

// ---------------------------------------------------------------------------
// One bridge per case, on a shared broker
// ---------------------------------------------------------------------------

interface Harness {
  broker: TestBroker;
  bridge: Bridge;
  adapter: HomeAssistantDiscovery;
  client: MqttClient;
  logs: ReturnType<typeof logSink>;
  prefix: string;
  dir: string;
  sync: number;
}

/** A broker, a publishing client and a bridge of its own, so cases can run side by side. */
async function open(prefix: string): Promise<Harness> {
  const broker = await startAedes();
  const client = await mqtt.connectAsync(broker.url, { protocolVersion: 4, reconnectPeriod: 100 });
  const dir = mkdtempSync(join(tmpdir(), 'hearth-ha-'));
  mkdirSync(join(dir, 'devices'));
  const logs = logSink('debug');
  const { config } = loadConfig({
    cwd: dir,
    env: {},
    flags: {
      'mqtt.url': broker.url,
      'mqtt.protocolVersion': '4',
      'mqtt.reconnectMinMs': '100',
      'devices.paths': [join(dir, 'devices')],
      demo: false,
      'database.path': join(dir, 'hearth.db'),
      'discovery.homeassistant.prefix': prefix,
      'discovery.zigbee2mqtt.enabled': 'false',
      'discovery.homie.enabled': 'false',
    },
  });
  const bridge = await Bridge.start({ config, log: logs.log, connectWaitMs: 5000 });
  const adapter = bridge.adapters.find((a) => a.name === 'homeassistant') as HomeAssistantDiscovery;
  assert.ok(adapter, 'the Home Assistant adapter runs');
  return { broker, bridge, adapter, client, logs, prefix, dir, sync: 0 };
}

async function close(h: Harness): Promise<void> {
  await h.bridge.close();
  await h.client.endAsync(true).catch(() => undefined);
  await h.broker.stop();
  rmSync(h.dir, { recursive: true, force: true });
}

/** Publish, then make sure the bridge has handled it (a sentinel after it), the registry has it, and new subscriptions are live. */
async function send(h: Harness, topic: string, payload: Buffer): Promise<ProcessedEvent[]> {
  const events: ProcessedEvent[] = [];
  const sentinel = `${h.prefix}/sensor/hearth_sync_${++h.sync}/config`;
  const done = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${sentinel}`)), 5000);
    const on = (e: ProcessedEvent) => {
      if (e.topic === sentinel) {
        clearTimeout(timer);
        h.adapter.off('processed', on);
        resolve();
      } else events.push(e);
    };
    h.adapter.on('processed', on);
  });
  await h.client.publishAsync(topic, payload, { qos: 0 });
  await h.client.publishAsync(sentinel, '', { qos: 0 });
  await done;
  await h.adapter.settled();
  // A SUBACK on the bridge's own client means its earlier SUBSCRIBEs are in place.
  await h.bridge.connection.client.subscribeAsync(`hearth-test/barrier/${h.sync}`, { qos: 0 });
  return events;
}

/** Publish a state message and wait until the bridge's client has had the chance to handle it. */
async function sendState(h: Harness, topic: string, payload: Buffer): Promise<void> {
  await send(h, topic, payload);
}

function snapshot(h: Harness): string {
  const entities = h.bridge.registry
    .entities()
    .map((e) => `${e.id}:${e.kind}:${e.name}:${e.stateTopic ?? ''}:${e.commandTopic ?? ''}`)
    .sort();
  const items = h.adapter
    .items()
    .map((i) => `${i.hash}@${i.topic}`)
    .sort();
  return JSON.stringify({ entities, items });
}

const caseTopicItems = (h: Harness, c: Case) => h.adapter.items().filter((i) => i.topic === c.topic || i.topic.startsWith(`${c.topic} (component `));

/** Log lines about a topic (including a device payload's components). */
const linesAbout = (h: Harness, topic: string): LogLine[] =>
  h.logs.lines.filter((l) => typeof l.topic === 'string' && (l.topic === topic || l.topic.startsWith(`${topic} (component `)));

async function replayRequires(h: Harness, c: Case, seen = new Set<string>()): Promise<void> {
  for (const r of c.requires ?? []) {
    if (seen.has(r)) continue;
    seen.add(r);
    const req = cases.get(r);
    assert.ok(req, `required case ${r} exists`);
    await replayRequires(h, req, seen);
    const events = await send(h, req.topic, wire(req.payload));
    assert.ok(
      events.some((e) => e.outcome === 'accept'),
      `required case ${r} is accepted`,
    );
  }
}

// ---------------------------------------------------------------------------
// Checking a discovery case
// ---------------------------------------------------------------------------

async function checkCase(c: Case): Promise<string | undefined> {
  const h = await open(c.discovery_prefix ?? 'homeassistant');
  try {
    await replayRequires(h, c);
    const before = snapshot(h);
    const beforeItems = caseTopicItems(h, c);
    const events = await send(h, c.topic, wire(c.payload));
    const after = snapshot(h);
    const mine = events.filter((e) => e.topic === c.topic || e.topic.startsWith(`${c.topic} (component `));
    switch (c.expect) {
      case 'accept': {
        if (!mine.some((e) => e.outcome === 'accept' || e.outcome === 'remove')) {
          return `expected accept, got ${JSON.stringify(mine.map((e) => `${e.outcome}: ${e.reason ?? ''}`))}`;
        }
        const rejected = mine.filter((e) => e.outcome === 'reject');
        if (rejected.length) return `parts were rejected: ${rejected.map((e) => e.reason).join('; ')}`;
        for (const e of mine.filter((x) => x.outcome === 'accept')) {
          const item = h.adapter.items().find((i) => i.hash === e.hash);
          if (!item) return `accepted ${e.hash} is not listed`;
          if (item.noTool) {
            if (!linesAbout(h, e.topic).some((l) => /no tool/.test(l.msg))) return `${e.hash}: no-tool reason not logged`;
            continue;
          }
          if (!item.entityId) return `${e.hash} has no entity id`;
          const onPurpose = REFUSED_ON_PURPOSE[c.file];
          if (onPurpose) {
            if (h.bridge.registry.entity(item.entityId)) return `${item.entityId} should be refused (it commands a topic Hearth never publishes on)`;
            const said = h.logs.lines.some((l) => l.refused === item.entityId && onPurpose.test(l.msg) && /never publishes on/.test(l.msg));
            if (!said) return `no log line says why ${item.entityId} was refused`;
            continue;
          }
          const entity = h.bridge.registry.entity(item.entityId);
          if (!entity) return `${item.entityId} is not in the registry`;
          if (!/^[a-z0-9][a-z0-9_-]{0,63}$/.test(entity.deviceId)) return `device id ${entity.deviceId} breaks the device-file rules`;
          if (!/^[a-z0-9][a-z0-9_]{0,63}$/.test(entity.key)) return `entity key ${entity.key} breaks the device-file rules`;
        }
        return undefined;
      }
      case 'reject': {
        if (mine.some((e) => e.outcome === 'accept' || e.outcome === 'remove')) return `expected reject, got ${JSON.stringify(mine)}`;
        if (after !== before) return 'the registry changed';
        const received = mine.length > 0;
        const isConfigTopic = /\/config$/.test(c.topic);
        if (isConfigTopic && !received) return 'the message never reached the adapter';
        // A topic that is not a discovery topic at all is ignored silently, as Home Assistant does.
        if (received && !linesAbout(h, c.topic).some((l) => /ignored/.test(l.msg))) return 'no log line says why it was ignored';
        return undefined;
      }
      case 'remove': {
        if (!beforeItems.length) return 'nothing was there to remove';
        if (!mine.some((e) => e.outcome === 'remove')) return `expected remove, got ${JSON.stringify(mine)}`;
        const left = caseTopicItems(h, c).filter((i) => beforeItems.some((b) => b.hash === i.hash));
        if (left.length) return `still there: ${left.map((i) => i.hash).join(', ')}`;
        for (const b of beforeItems) if (b.entityId && h.bridge.registry.entity(b.entityId)) return `${b.entityId} is still in the registry`;
        return undefined;
      }
    }
  } finally {
    await close(h);
  }
}

// ---------------------------------------------------------------------------
// Checking state messages
// ---------------------------------------------------------------------------

/** The Home Assistant state string of a Hearth entity. */
function haState(h: Harness, entity: Entity): string {
  const s = h.bridge.cache.get(entity.id);
  if (s?.available !== true) return 'unavailable';
  if (s.value === undefined || s.value === null) return 'unknown';
  return String(s.value);
}

function haAttributes(h: Harness, entity: Entity, expected: Record<string, unknown>): Record<string, unknown> {
  const s = h.bridge.cache.get(entity.id)!;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(expected)) {
    if (key === 'state') out.state = haState(h, entity);
    else if (key === 'brightness') {
      // Hearth keeps brightness on the device's own scale; HA shows it on 0..255.
      const b = s.attributes.brightness;
      const max = entity.ranges.brightness?.max ?? 255;
      out.brightness = typeof b === 'number' ? Math.round((b * 255) / max) : null;
    } else if (key === 'hs_color') out.hs_color = [s.attributes.hue ?? null, s.attributes.saturation ?? null];
    else out[key] = s.attributes[key] ?? null;
  }
  return out;
}

const stateResults: Array<{ file: string; ok: boolean; detail?: string }> = [];

async function checkStates(caseFile: string, steps: StateCase[]): Promise<void> {
  const c = cases.get(caseFile)!;
  const h = await open(c.discovery_prefix ?? 'homeassistant');
  try {
    await replayRequires(h, c);
    await send(h, c.topic, wire(c.payload));
    const items = caseTopicItems(h, c).filter((i) => i.entityId);
    for (const step of steps) {
      await sendState(h, step.topic, wire(step.payload));
      let actual: unknown;
      const expected = step.expect_value;
      if (typeof expected === 'string') {
        const entity = h.bridge.registry.entity(items[0]?.entityId ?? '');
        actual = entity ? haState(h, entity) : '(no entity)';
      } else if (c.component === 'device') {
        const out: Record<string, string> = {};
        for (const id of Object.keys(expected as object)) {
          const item = items.find((i) => i.topic === `${c.topic} (component ${id})` || i.hash.endsWith(` ${id}`));
          const entity = item?.entityId ? h.bridge.registry.entity(item.entityId) : undefined;
          out[id] = entity ? haState(h, entity) : '(no entity)';
        }
        actual = out;
      } else {
        const entity = h.bridge.registry.entity(items[0]?.entityId ?? '');
        actual = entity ? haAttributes(h, entity, expected as Record<string, unknown>) : '(no entity)';
      }
      let ok = true;
      let detail: string | undefined;
      try {
        assert.deepEqual(actual, expected);
      } catch {
        ok = false;
        detail = `expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`;
      }
      stateResults.push({ file: step.file, ok, detail });
    }
  } finally {
    await close(h);
  }
}

// ---------------------------------------------------------------------------

const caseResults: Array<{ file: string; ok: boolean; detail?: string }> = [];

describe('Home Assistant discovery fixtures', { concurrency: 4 }, () => {
  test('the fixture folder holds 117 cases and 28 state messages', () => {
    assert.equal(cases.size, 117);
    assert.equal(states.length, 28);
  });

  for (const c of cases.values()) {
    test(`${c.file} (${c.expect})`, async () => {
      const problem = await checkCase(c).catch((err: Error) => `threw: ${err.message}`);
      caseResults.push({ file: c.file, ok: !problem, detail: problem });
      assert.equal(problem, undefined, `${c.file}: ${problem}\n  notes: ${c.notes}`);
    });
  }

  const byCase = new Map<string, StateCase[]>();
  for (const s of states) byCase.set(s.case, [...(byCase.get(s.case) ?? []), s]);
  for (const [caseFile, steps] of byCase) {
    test(`state messages of ${caseFile} (${steps.length})`, async () => {
      const done = new Set(stateResults.map((r) => r.file));
      await checkStates(caseFile, steps).catch((err: Error) => {
        for (const step of steps)
          if (!stateResults.some((r) => r.file === step.file)) stateResults.push({ file: step.file, ok: false, detail: `threw: ${err.message}` });
      });
      const mine = stateResults.filter((r) => steps.some((st) => st.file === r.file) && !done.has(r.file) && !r.ok);
      assert.deepEqual(mine, [], mine.map((r) => `${r.file}: ${r.detail}`).join('\n'));
    });
  }

  // Runs after every case (concurrency-safe: it waits for the results).
  test('summary', async () => {
    await waitFor('every case and state message to be checked', () => caseResults.length === cases.size && stateResults.length === states.length, 60_000);
    const agree = caseResults.filter((r) => r.ok).length;
    const stateAgree = stateResults.filter((r) => r.ok).length;
    console.log(`${agree}/${cases.size} cases agree with Home Assistant`);
    console.log(`${stateAgree}/${states.length} state messages agree with Home Assistant`);
    for (const r of [...caseResults, ...stateResults].filter((x) => !x.ok)) console.log(`  disagree: ${r.file}: ${r.detail}`);
    assert.equal(agree, cases.size);
    assert.equal(stateAgree, states.length);
  });
});
