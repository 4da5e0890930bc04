// The state cache reading a reading again (a device file edit, a discovery config re-published with another
// template) from the broker's retained copy: which readers a replay is for, when a live report comes between the
// SUBSCRIBE and its replay, and how often a topic may be subscribed again. The order of a live report and a
// replay is the broker's and the network's: here a recording source plays each order out, message by message.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import { parseDeviceFile } from '../../src/devices/loader.js';
import type { Device } from '../../src/devices/model.js';
import { REREAD_TOPIC_MIN_MS, REREAD_TOPICS_BURST, REREAD_TOPICS_PER_SECOND, StateCache } from '../../src/devices/state-cache.js';
import { logSink } from '../helpers/log-sink.js';

/** What the cache asks of the MQTT connection: topics subscribed, and each SUBSCRIBE sent again. */
class RecordingSource extends EventEmitter {
  subscribed = new Set<string>();
  resubscribes: string[] = [];
  subscribe(topics: Iterable<string>) {
    for (const t of topics) this.subscribed.add(t);
  }
  unsubscribe(topics: Iterable<string>) {
    for (const t of topics) this.subscribed.delete(t);
  }
  resubscribe(topics: readonly string[]) {
    const sent = topics.filter((t) => this.subscribed.has(t));
    this.resubscribes.push(...sent);
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
  return { source, cache, sink, clock };
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

  it('two SUBSCRIBEs, two replays: each read by the changed reading only, and none after them', () => {
    const clock = { now: 1_000_000 };
    const { source, cache } = heard(clock);
    cache.setDevices(home(office('probe')));
    clock.now += REREAD_TOPIC_MIN_MS;
    cache.setDevices(home(office('alt')));
    assert.deepEqual(source.resubscribes, ['zigbee2mqtt/office', 'zigbee2mqtt/office']);
    cache.handle('zigbee2mqtt/office', RETAINED, true);
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

  it('a topic is read again at most once in REREAD_TOPIC_MIN_MS; past it, the reading waits for a live report', () => {
    const clock = { now: 1_000_000 };
    const { source, cache, sink } = heard(clock);
    cache.setDevices(home(office('probe')));
    cache.handle('zigbee2mqtt/office', RETAINED, true);
    assert.equal(cache.get('office.temperature')!.value, 10);
    // The same topic read another way again, within the interval: forgotten, not subscribed again.
    clock.now += REREAD_TOPIC_MIN_MS - 1;
    cache.setDevices(home(office('alt')));
    assert.deepEqual(source.resubscribes, ['zigbee2mqtt/office']);
    assert.equal(cache.get('office.temperature')!.value, undefined, 'unknown, not the probe read another way');
    assert.equal(sink.find(/not read again/).length, 1);
    assert.equal(sink.find(/not read again/)[0]!.readings, 1);
    cache.handle('zigbee2mqtt/office', report({ temperature: 22, probe: 12, alt: 7, humidity: 50 }), false);
    assert.equal(cache.get('office.temperature')!.value, 7, 'the next live report reads it');
    clock.now += 1;
    cache.setDevices(home(office('temperature')));
    assert.deepEqual(source.resubscribes, ['zigbee2mqtt/office', 'zigbee2mqtt/office'], 'once the interval is past, read again');
  });

  it('at most REREAD_TOPICS_BURST topics at once, then REREAD_TOPICS_PER_SECOND, with one warning line', () => {
    const clock = { now: 1_000_000 };
    const { source, cache, sink } = cacheAt(clock);
    const n = REREAD_TOPICS_BURST + 100;
    const sensors = (path: string) =>
      home(
        `devices:\n${Array.from(
          { length: n },
          (_, i) =>
            `  - id: plug_${i}\n    name: Plug ${i}\n    entities:\n      power: { kind: sensor, state_topic: tele/plug_${i}/SENSOR, value_path: ${path} }\n`,
        ).join('')}`,
      );
    cache.setDevices(sensors('ENERGY.Power'));
    cache.setDevices(sensors('ENERGY.ApparentPower'));
    assert.equal(source.resubscribes.length, REREAD_TOPICS_BURST);
    const lines = sink.find(/not read again/);
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.readings, 100);
    assert.equal(lines[0]!.topics, 100);
    // A second later, past the interval for none of them: the bucket gave back a second's worth.
    clock.now += 1000;
    source.resubscribes = [];
    cache.setDevices(sensors('ENERGY.Power'));
    assert.equal(source.resubscribes.length, REREAD_TOPICS_PER_SECOND, 'only the topics not read again lately, a second of the bucket');
    assert.equal(sink.find(/not read again/).length, 1, 'the next warning waits a minute (its count adds up meanwhile)');
  });
});
