// The state cache reading a reading again (a device file edit, a discovery config re-published with another
// template) from the broker's retained copy: which readers a replay is for, when a live report comes between the
// SUBSCRIBE and its replay, and how often a topic may be subscribed again. The order of a live report and a
// replay is the broker's and the network's: here a recording source plays each order out, message by message.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { after, describe, it } from 'node:test';
import { parseDeviceFile } from '../../src/devices/loader.js';
import type { Device } from '../../src/devices/model.js';
import {
  type EntityState,
  REREAD_TOPIC_MIN_MS,
  REREAD_TOPICS_BURST,
  REREAD_TOPICS_PER_SECOND,
  type RereadLimits,
  StateCache,
} from '../../src/devices/state-cache.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';

/** What the cache asks of the MQTT connection: topics subscribed, and each SUBSCRIBE sent again. */
class RecordingSource extends EventEmitter {
  subscribed = new Set<string>();
  resubscribes: string[] = [];
  /** The connection is down: MqttConnection.resubscribe sends nothing then (the next session brings every retained message). */
  down = false;
  /** The broker's retained messages: replayed (later, as a broker does) on each SUBSCRIBE sent again, when set. */
  retained?: Map<string, Buffer>;
  subscribe(topics: Iterable<string>) {
    for (const t of topics) this.subscribed.add(t);
  }
  unsubscribe(topics: Iterable<string>) {
    for (const t of topics) this.subscribed.delete(t);
  }
  resubscribe(topics: readonly string[]) {
    if (this.down) return [];
    const sent = topics.filter((t) => this.subscribed.has(t));
    this.resubscribes.push(...sent);
    const retained = this.retained;
    if (retained)
      setImmediate(() => {
        for (const t of sent) if (retained.has(t)) this.emit('message', t, retained.get(t)!, true);
      });
    return sent;
  }
}

/** The office multisensor: one JSON report, its temperature read by `tempPath`; `more` devices after it. */
const office = (tempPath: string, more = '') => `
devices:
  - id: office
    name: Office multisensor
    entities:
      temperature: { kind: sensor, unit: °C, state_topic: zigbee2mqtt/office, value_path: ${tempPath} }
      humidity: { kind: sensor, unit: '%', state_topic: zigbee2mqtt/office, value_path: humidity }
${more}`;

function home(text: string): Device[] {
  const parsed = parseDeviceFile('home.yaml', text);
  assert.ok('devices' in parsed, JSON.stringify(parsed));
  return parsed.devices;
}

const report = (o: Record<string, number>) => Buffer.from(JSON.stringify(o));
/** The broker's retained copy, and the live reports after it (not retained: newer than the copy). */
const RETAINED = report({ temperature: 20, probe: 10, alt: 5, humidity: 40 });

function cacheAt(clock = { now: 1_000_000 }) {
  const source = new RecordingSource();
  const sink = logSink('warn');
  const cache = new StateCache(source as never, sink.log, () => clock.now);
  caches.push(cache);
  return { source, cache, sink, clock };
}

/** Every cache made here, closed after the tests (their timers). */
const caches: StateCache[] = [];
after(() => {
  for (const cache of caches) cache.close();
});

/** `n` Tasmota plugs of one device file, each its own device, their power read at `path`. */
const plugs = (n: number, path: string, prefix = 'plug') =>
  `devices:\n${Array.from(
    { length: n },
    (_, i) =>
      `  - id: ${prefix}_${i}\n    name: ${prefix} ${i}\n    entities:\n      power: { kind: sensor, state_topic: tele/${prefix}_${i}/SENSOR, value_path: ${path} }\n`,
  ).join('')}`;

/**
 * A cache on the real clock with small bounds, whose source replays the broker's retained copy of each topic
 * subscribed again, as a broker does.
 */
function brokerLike(limits: Partial<RereadLimits>) {
  const source = new RecordingSource();
  source.retained = new Map();
  const sink = logSink('warn');
  const cache = new StateCache(source as never, sink.log, Date.now, limits);
  caches.push(cache);
  return { source, cache, sink };
}

/** Resolves with the state of `entityId` once a change event says it holds `value` (bounded). */
function changeTo(cache: StateCache, entityId: string, value: unknown): Promise<EntityState> {
  return waitFor(`${entityId} = ${String(value)}`, () => {
    const state = cache.get(entityId);
    return state?.value === value ? state : undefined;
  });
}

/** A cache that read the retained copy, then a live report (humidity 47). */
function heard(clock?: { now: number }) {
  const at = cacheAt(clock);
  at.cache.setDevices(home(office('temperature')));
  at.cache.handle('zigbee2mqtt/office', RETAINED, true);
  at.cache.handle('zigbee2mqtt/office', report({ temperature: 21, probe: 11, alt: 6, humidity: 47 }), false);
  assert.equal(at.cache.get('office.humidity')!.value, 47);
  return at;
}

describe('state cache: reading again from the retained copy', () => {
  it('a live report between the SUBSCRIBE and its replay: the late replay changes nothing', () => {
    const { source, cache } = heard();
    cache.setDevices(home(office('probe')));
    assert.deepEqual(source.resubscribes, ['zigbee2mqtt/office']);
    assert.equal(cache.get('office.temperature')!.value, undefined);
    // The device reports before the broker has handled the SUBSCRIBE...
    cache.handle('zigbee2mqtt/office', report({ temperature: 22, probe: 12, alt: 7, humidity: 50 }), false);
    assert.equal(cache.get('office.temperature')!.value, 12);
    assert.equal(cache.get('office.humidity')!.value, 50);
    // ...then the replay of the older copy comes: no one's now.
    cache.handle('zigbee2mqtt/office', RETAINED, true);
    assert.equal(cache.get('office.humidity')!.value, 50, 'the humidity does not go back to the older retained copy');
    assert.equal(cache.get('office.temperature')!.value, 12, 'nor the temperature');
    // The replay came: a retained message after it (a reconnect's) is everyone's again.
    cache.handle('zigbee2mqtt/office', report({ temperature: 23, probe: 13, alt: 8, humidity: 52 }), true);
    assert.equal(cache.get('office.humidity')!.value, 52);
  });

  it('two edits before the first replay: one SUBSCRIBE, its replay read by the newest reading only', () => {
    const { source, cache } = heard();
    cache.setDevices(home(office('probe')));
    cache.setDevices(home(office('alt')));
    assert.deepEqual(source.resubscribes, ['zigbee2mqtt/office'], 'the replay asked for is read by the second edit too');
    cache.handle('zigbee2mqtt/office', RETAINED, true);
    assert.equal(cache.get('office.temperature')!.value, 5);
    assert.equal(cache.get('office.humidity')!.value, 47, 'the humidity keeps the live report');
  });

  it('two SUBSCRIBEs an interval apart, two replays: each read by the changed reading only, and none after them', () => {
    const clock = { now: 1_000_000 };
    const { source, cache } = heard(clock);
    cache.setDevices(home(office('probe')));
    cache.handle('zigbee2mqtt/office', RETAINED, true);
    assert.equal(cache.get('office.temperature')!.value, 10);
    clock.now += REREAD_TOPIC_MIN_MS;
    cache.setDevices(home(office('alt')));
    assert.deepEqual(source.resubscribes, ['zigbee2mqtt/office', 'zigbee2mqtt/office']);
    cache.handle('zigbee2mqtt/office', RETAINED, true);
    assert.equal(cache.get('office.temperature')!.value, 5);
    assert.equal(cache.get('office.humidity')!.value, 47, 'neither replay takes the humidity back');
    cache.handle('zigbee2mqtt/office', report({ temperature: 23, probe: 13, alt: 8, humidity: 52 }), true);
    assert.equal(cache.get('office.humidity')!.value, 52, 'a retained message after both replays is for every reader');
  });

  it('a reading whose entity went before the replay came is not kept waiting for it', () => {
    const { cache } = heard();
    // What waits for the replay (private: nothing a user sees until memory runs out).
    const waiting = () => {
      const w = (cache as unknown as { rereading: Map<string, { keys: Set<string> } | Set<string>> }).rereading.get('zigbee2mqtt/office');
      return w instanceof Set ? w.size : (w?.keys.size ?? 0);
    };
    // A discovery source adding and dropping entities on the sensor's topic, one flush after another, no replay yet.
    for (let i = 0; i < 500; i++) {
      const extra = `  - id: shelly_${i}\n    name: Shelly ${i}\n    entities:\n      power: { kind: sensor, state_topic: zigbee2mqtt/office, value_path: power }`;
      cache.setDevices(home(office('temperature', extra)));
    }
    assert.ok(waiting() <= 3, `${waiting()} readings wait on a topic with 3`);
  });

  it('a topic is read again at most once in REREAD_TOPIC_MIN_MS; within it, the reading waits its turn, or a live report', () => {
    const clock = { now: 1_000_000 };
    const { source, cache, sink } = heard(clock);
    cache.setDevices(home(office('probe')));
    cache.handle('zigbee2mqtt/office', RETAINED, true);
    assert.equal(cache.get('office.temperature')!.value, 10);
    // The same topic read another way again, within the interval: forgotten, and waiting its turn.
    clock.now += REREAD_TOPIC_MIN_MS - 1;
    cache.setDevices(home(office('alt')));
    assert.deepEqual(source.resubscribes, ['zigbee2mqtt/office']);
    assert.equal(cache.get('office.temperature')!.value, undefined, 'unknown, not the probe read another way');
    const lines = sink.find(/wait their turn/);
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.readings, 1);
    // A live report reads it first: nothing is left to read again.
    cache.handle('zigbee2mqtt/office', report({ temperature: 22, probe: 12, alt: 7, humidity: 50 }), false);
    assert.equal(cache.get('office.temperature')!.value, 7, 'the next live report reads it');
    clock.now += 1;
    cache.setDevices(home(office('alt')));
    assert.deepEqual(source.resubscribes, ['zigbee2mqtt/office'], 'nothing waits for the topic any more');
    // Read another way once more, past the interval: read again at once.
    cache.setDevices(home(office('temperature')));
    assert.deepEqual(source.resubscribes, ['zigbee2mqtt/office', 'zigbee2mqtt/office'], 'once the interval is past, read again');
  });

  it('at most REREAD_TOPICS_BURST topics at once, then REREAD_TOPICS_PER_SECOND, with one warning line; the rest wait', () => {
    const clock = { now: 1_000_000 };
    const { source, cache, sink } = cacheAt(clock);
    const n = REREAD_TOPICS_BURST + 100;
    cache.setDevices(home(plugs(n, 'ENERGY.Power')));
    cache.setDevices(home(plugs(n, 'ENERGY.ApparentPower')));
    assert.equal(source.resubscribes.length, REREAD_TOPICS_BURST);
    const lines = sink.find(/wait their turn/);
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.readings, 100);
    assert.equal(lines[0]!.topics, 100);
    // A second later the bucket gave back a second's worth: the topics that waited, not those read a second ago.
    clock.now += 1000;
    source.resubscribes = [];
    cache.setDevices(home(plugs(n, 'ENERGY.Power')));
    assert.equal(source.resubscribes.length, REREAD_TOPICS_PER_SECOND, 'a second of the bucket');
    assert.ok(
      source.resubscribes.every((t) => Number(t.split('_')[1]!.split('/')[0]) >= REREAD_TOPICS_BURST),
      'the topics that waited go first: the others were read a second ago',
    );
    assert.equal(sink.find(/wait their turn/).length, 1, 'the next warning waits a minute (its count adds up meanwhile)');
  });

  it("the warning of readings waiting comes once a minute by the cache's clock, with what added up", () => {
    const clock = { now: 1_000_000 };
    const { cache, sink } = cacheAt(clock);
    const n = REREAD_TOPICS_BURST + 10;
    cache.setDevices(home(plugs(n, 'ENERGY.Power')));
    cache.setDevices(home(plugs(n, 'ENERGY.ApparentPower')));
    clock.now += 1000;
    cache.setDevices(home(plugs(n, 'ENERGY.Power')));
    assert.equal(sink.find(/wait their turn/).length, 1);
    // A minute later by the cache's clock (not the machine's: no test waits a minute).
    clock.now += 60_000;
    cache.setDevices(home(plugs(n, 'ENERGY.ApparentPower')));
    const lines = sink.find(/wait their turn/);
    assert.equal(lines.length, 2, "a minute later by the cache's clock, the next line");
    assert.ok((lines[1]!.readings as number) > 0);
  });

  it('a token is spent only on a topic subscribed again: none while the connection is down', () => {
    const clock = { now: 1_000_000 };
    const { source, cache } = cacheAt(clock);
    cache.setDevices(home(plugs(REREAD_TOPICS_BURST, 'ENERGY.Power')));
    // Down: nothing sent (the next session brings every retained message, for every reader).
    source.down = true;
    cache.setDevices(home(plugs(REREAD_TOPICS_BURST, 'ENERGY.ApparentPower')));
    assert.equal(source.resubscribes.length, 0);
    // Up again, within the same second, another change: the whole burst is there for it.
    source.down = false;
    cache.setDevices(home(plugs(REREAD_TOPICS_BURST, 'ENERGY.Voltage')));
    assert.equal(source.resubscribes.length, REREAD_TOPICS_BURST);
  });

  it("a SUBSCRIBE whose replay never comes (no retained message) is over after REREAD_TOPIC_MIN_MS: a later retained message is everyone's", () => {
    const clock = { now: 1_000_000 };
    const { source, cache } = heard(clock);
    // The broker holds no retained message for the topic any more (cleared): the SUBSCRIBE brings nothing.
    cache.setDevices(home(office('probe')));
    assert.deepEqual(source.resubscribes, ['zigbee2mqtt/office']);
    clock.now += REREAD_TOPIC_MIN_MS;
    // Much later, a retained report (a reconnect's replay, or another subscription's): read by every reader.
    cache.handle('zigbee2mqtt/office', report({ temperature: 23, probe: 13, alt: 8, humidity: 52 }), true);
    assert.equal(cache.get('office.humidity')!.value, 52, 'the humidity reads it, not only the probe');
    assert.equal(cache.get('office.temperature')!.value, 13);
  });
});

describe('state cache: readings over the bounds wait their turn, device by device', () => {
  it('a reading changed over the budget is read from the retained copy after its wait, without a live report', async () => {
    const { source, cache, sink } = brokerLike({ topicMinMs: 200, perSecond: 20, burst: 1 });
    const text = (path: string) => `${office(path)}${plugs(1, 'ENERGY.Power').slice('devices:\n'.length)}`;
    cache.setDevices(home(text('temperature')));
    source.retained!.set('zigbee2mqtt/office', RETAINED);
    source.retained!.set('tele/plug_0/SENSOR', Buffer.from(JSON.stringify({ ENERGY: { Power: 40, ApparentPower: 55 } })));
    cache.handle('zigbee2mqtt/office', RETAINED, true);
    cache.handle('tele/plug_0/SENSOR', source.retained!.get('tele/plug_0/SENSOR')!, true);
    // Both read another way at once: the bucket holds one topic.
    const edited = `${office('probe')}${plugs(1, 'ENERGY.ApparentPower').slice('devices:\n'.length)}`;
    cache.setDevices(home(edited));
    assert.equal(source.resubscribes.length, 1);
    assert.equal(sink.find(/wait their turn/).length, 1);
    await changeTo(cache, 'office.temperature', 10);
    await changeTo(cache, 'plug_0.power', 55);
    assert.deepEqual(source.resubscribes.sort(), ['tele/plug_0/SENSOR', 'zigbee2mqtt/office']);
  });

  it("a device changing how hundreds of readings are read does not keep another device's reading waiting", async () => {
    const { source, cache } = brokerLike({ topicMinMs: 200, perSecond: 20, burst: 1 });
    // A forged discovery source's 200 "sensors", listed before the office multisensor.
    const flood = (path: string) =>
      `devices:\n  - id: forged\n    name: Forged\n    entities:\n${Array.from(
        { length: 200 },
        (_, i) => `      s${i}: { kind: sensor, state_topic: forged/${i}, value_path: ${path} }\n`,
      ).join('')}${office('temperature').slice('\ndevices:\n'.length)}`;
    const floodAnd = (path: string, officePath: string) => flood(path).replace('value_path: temperature', `value_path: ${officePath}`);
    cache.setDevices(home(floodAnd('a', 'temperature')));
    source.retained!.set('zigbee2mqtt/office', RETAINED);
    for (let i = 0; i < 200; i++) source.retained!.set(`forged/${i}`, Buffer.from(JSON.stringify({ a: i, b: -i })));
    cache.handle('zigbee2mqtt/office', RETAINED, true);
    // Counted when the office's reading arrives, not when a poll notices it (the drain goes on meanwhile).
    let forged: number | undefined;
    cache.on('change', (state, entity) => {
      if (entity.id === 'office.temperature' && state.value === 10 && forged === undefined)
        forged = source.resubscribes.filter((t) => t.startsWith('forged/')).length;
    });
    cache.setDevices(home(floodAnd('b', 'probe')));
    await changeTo(cache, 'office.temperature', 10);
    assert.ok(forged !== undefined && forged <= 3, `the office read after ${forged} of the forged device's 200 topics`);
  });
});
