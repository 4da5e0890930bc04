// A burst of bad discovery configs on thousands of topics writes a bounded number of log lines. Anything from the
// broker is bounded in work per message and per second, log lines included: before, Home Assistant discovery and
// Homie logged a line per bad config, once per topic, so a publisher inventing topics wrote a line per message.
// Now a source's lines about configs are bounded across topics (util/line-budget.ts): a first few lines, each
// naming its topic and what was wrong, then a summary with the count and the first topics, then at most a line a
// second. A real broker (aedes), a real SQLite file, a Hearth with both sources on.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import type { Hearth } from '../../src/hearth.js';
import { LINE_BUDGET } from '../../src/util/line-budget.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { openHearth } from '../helpers/home.js';
import { type LogLine, logSink } from '../helpers/log-sink.js';
import { started } from '../helpers/use-home.js';
import { waitFor } from '../helpers/wait.js';

const BURST = 3000;

/** The lines `lines` says about the bad configs: each its own (`own`) or a summary; with the configs they stand for. */
function tally(lines: LogLine[], own: (l: LogLine) => boolean, summary: RegExp) {
  const ownLines = lines.filter(own);
  const summaries = lines.filter((l) => typeof l.quietCount === 'number' && summary.test(l.msg));
  return { ownLines, summaries, counted: ownLines.length + summaries.reduce((n, l) => n + (l.quietCount as number), 0) };
}

/** The describe block's own broker, a device client on it, and a Hearth with both discovery sources on logging into `logs`. */
function floodedHome(dirPrefix: string) {
  const dir = mkdtempSync(join(tmpdir(), dirPrefix));
  const logs = logSink('debug');
  let broker: TestBroker | undefined;
  let hearth: Hearth | undefined;
  let device: MqttClient | undefined;
  before(async () => {
    broker = await startAedes();
    device = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    hearth = await openHearth(broker.url, dir, logs.log, { 'mqtt.protocolVersion': '4', 'discovery.homie.enabled': true });
  });
  after(async () => {
    await hearth?.close();
    await device?.endAsync(true);
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    logs,
    get device() {
      return started(device, 'the device client');
    },
    get hearth() {
      return started(hearth, 'Hearth');
    },
  };
}

describe('security: a burst of bad discovery configs on distinct topics logs a bounded number of lines', () => {
  const home = floodedHome('hearth-discovery-log-flood-');
  const logs = home.logs;

  it('Home Assistant discovery: a handful of bad configs get a line each naming topic and field; a burst of 3,000 a few lines and a summary with the count', async () => {
    // A handful, as a real home's mistakes come: each its own line, naming its topic and the field.
    const few = ['porch_motion', 'garage_temperature', 'attic_humidity'];
    for (const id of few)
      await home.device.publishAsync(`homeassistant/sensor/${id}/config`, JSON.stringify({ name: id, availability: 1, state_topic: `${id}/state` }), {
        qos: 1,
      });
    for (const id of few) {
      const line = await waitFor(`the line about ${id}`, () => logs.lines.find((l) => l.topic === `homeassistant/sensor/${id}/config`));
      assert.match(line.msg, /^discovery config ignored: invalid sensor config: .*availability/);
    }

    const from = logs.lines.length;
    const started = Date.now();
    for (let i = 0; i < BURST; i++)
      home.device.publish(`homeassistant/sensor/forged_${i}/config`, JSON.stringify({ name: `Forged ${i}`, availability: 1, state_topic: `forged/${i}` }), {
        qos: 0,
      });
    await home.device.publishAsync('hearth-test/sent', '1', { qos: 1 });
    const bad = (l: LogLine) => typeof l.topic === 'string' && l.topic.startsWith('homeassistant/sensor/forged_');
    // Every bad config is accounted for: a line of its own or a summary's count.
    const seen = await waitFor(
      'every bad config logged or counted',
      () => {
        const t = tally(logs.lines.slice(from), bad, /^Home Assistant discovery: \d+ more lines about configs/);
        return t.counted >= BURST && t;
      },
      30_000,
    );
    const seconds = (Date.now() - started) / 1000;
    assert.equal(seen.counted, BURST, 'each bad config counted once');
    // The first few get a line of their own, naming topic and field.
    assert.ok(seen.ownLines.length >= 1 && seen.ownLines.length <= LINE_BUDGET.burst + Math.ceil(seconds) * LINE_BUDGET.perSecond);
    for (const l of seen.ownLines.slice(0, 3)) assert.match(l.msg, /invalid sensor config: .*availability/);
    // The rest: a summary saying how many, and naming the first topics.
    const [first] = seen.summaries;
    assert.ok(first, 'a summary line');
    assert.match(
      first.msg,
      /^Home Assistant discovery: \d+ more lines about configs not written one by one \(homeassistant\/sensor\/forged_\d+\/config, .* and \d+ more\)$/,
    );
    assert.equal((first.topics as string[]).length, 5);
    // Everything the burst made Hearth write, at any level: the budget (a first batch, then a line a second).
    const lines = logs.lines.slice(from);
    assert.ok(
      lines.length <= LINE_BUDGET.burst + Math.ceil(seconds) * LINE_BUDGET.perSecond + 2,
      `${lines.length} lines for ${BURST} bad configs in ${seconds} s`,
    );
    assert.ok(lines.length < BURST / 10, `${lines.length} lines for ${BURST} bad configs`);
  });

  it('Homie: 3,000 devices with a broken $description give a few lines and a summary with the count', async () => {
    const from = logs.lines.length;
    const started = Date.now();
    for (let i = 0; i < BURST; i++) home.device.publish(`homie/5/forged-${i}/$description`, '{"homie": "5.0", "name": ', { qos: 0 });
    await home.device.publishAsync('hearth-test/sent', '2', { qos: 1 });
    const bad = (l: LogLine) => typeof l.topic === 'string' && /^homie\/5\/forged-\d+\/\$description$/.test(l.topic) && typeof l.quietCount !== 'number';
    const seen = await waitFor(
      'every broken device logged or counted',
      () => {
        const t = tally(logs.lines.slice(from), bad, /^homie: \d+ more lines about skipped/);
        return t.counted >= BURST && t;
      },
      30_000,
    );
    const seconds = (Date.now() - started) / 1000;
    assert.equal(seen.counted, BURST, 'each broken device counted once');
    assert.ok(seen.ownLines.length >= 1, 'the first ones have lines of their own');
    // Each names its device (a broken $description), or its topic (past the 2,000 Homie 5 devices kept).
    for (const l of seen.ownLines) assert.match(l.msg, /^homie: skipped (Homie 5 device "forged-\d+"|homie\/5\/forged-\d+\/\$description): /);
    assert.match(
      seen.summaries[0]!.msg,
      /^homie: \d+ more lines about skipped topics and devices not written one by one \(homie\/5\/forged-\d+\/\$description, .* and \d+ more\)$/,
    );
    const lines = logs.lines.slice(from).filter((l) => l.level >= 30);
    assert.ok(
      lines.length <= LINE_BUDGET.burst + Math.ceil(seconds) * LINE_BUDGET.perSecond + 2,
      `${lines.length} lines for ${BURST} broken devices in ${seconds} s`,
    );
    assert.equal(home.hearth.bridge.registry.devices().filter((d) => d.id.startsWith('forged')).length, 0, 'no device came of them');
  });
});

// Valid configs too: Home Assistant discovery logged "discovered" for every valid config and Homie "found" for every
// valid device, so a publisher announcing thousands of well-formed devices wrote a line for each. Now those lines are
// bounded across topics as the bad-config lines are: a first few, then a summary with the count.
describe('security: a burst of valid discovery configs on distinct topics logs a bounded number of lines', () => {
  const home = floodedHome('hearth-discovery-log-flood-valid-');
  const logs = home.logs;

  it('Home Assistant discovery: 3,000 valid configs give a few "discovered" lines and a summary with the count; every device is in the home', async () => {
    const from = logs.lines.length;
    const started = Date.now();
    for (let i = 0; i < BURST; i++)
      home.device.publish(
        `homeassistant/sensor/room_${i}/temperature/config`,
        JSON.stringify({
          name: 'Temperature',
          unique_id: `room_${i}_temperature`,
          state_topic: `rooms/room_${i}/temperature`,
          device_class: 'temperature',
          unit_of_measurement: '°C',
          device: { identifiers: [`room_${i}_sensor`], name: `Room ${i} sensor` },
        }),
        { qos: 0 },
      );
    await home.device.publishAsync('hearth-test/sent', '3', { qos: 1 });
    const own = (l: LogLine) =>
      typeof l.topic === 'string' && /^homeassistant\/sensor\/room_\d+\/temperature\/config$/.test(l.topic) && typeof l.quietCount !== 'number';
    const seen = await waitFor(
      'every valid config logged or counted',
      () => {
        const t = tally(logs.lines.slice(from), own, /^Home Assistant discovery: \d+ more configs discovered/);
        return t.counted >= BURST && t;
      },
      60_000,
    );
    const seconds = (Date.now() - started) / 1000;
    assert.equal(seen.counted, BURST, 'each valid config counted once');
    const budget = LINE_BUDGET.burst + Math.ceil(seconds) * LINE_BUDGET.perSecond;
    assert.ok(seen.ownLines.length >= 1 && seen.ownLines.length + seen.summaries.length <= budget, `${seen.ownLines.length} lines`);
    for (const l of seen.ownLines) assert.match(l.msg, /^discovered sensor room_\d+/);
    assert.match(
      seen.summaries[0]!.msg,
      /^Home Assistant discovery: \d+ more configs discovered, updated or removed, not logged one by one \(homeassistant\/sensor\/room_\d+\/temperature\/config, .* and \d+ more\)$/,
    );
    // They were valid: every one is a device of the home.
    await waitFor(
      'every room sensor in the home',
      () => home.hearth.bridge.registry.devices().filter((d) => /^Room \d+ sensor$/.test(d.name)).length === BURST,
      60_000,
    );
    const lines = logs.lines.slice(from);
    assert.ok(lines.length < BURST / 10, `${lines.length} lines for ${BURST} valid configs`);
  });

  it('Homie: 3,000 valid devices give a few "found" lines and a summary with the count', async () => {
    const from = logs.lines.length;
    const started = Date.now();
    const description = (i: number) =>
      JSON.stringify({
        homie: '5.0',
        version: 1,
        name: `Meter ${i}`,
        nodes: { power: { name: 'Power', properties: { watts: { name: 'Power', datatype: 'float', unit: 'W' } } } },
      });
    for (let i = 0; i < BURST; i++) home.device.publish(`homie/5/meter-${i}/$description`, description(i), { qos: 0 });
    await home.device.publishAsync('hearth-test/sent', '4', { qos: 1 });
    const own = (l: LogLine) => typeof l.msg === 'string' && /^homie: found Homie 5 device "meter-\d+"/.test(l.msg);
    const meters = () => home.hearth.bridge.registry.devices().filter((d) => /^Meter \d+$/.test(d.name)).length;
    // Past the 2,000 Homie 5 devices kept, the rest are skipped (on the budget of skipped devices): each found one is
    // counted, by a line of its own or a summary's count.
    const seen = await waitFor(
      'every device found logged or counted',
      () => {
        const t = tally(logs.lines.slice(from), own, /^homie: \d+ more devices found or gone/);
        return t.counted > 0 && t.counted === meters() && t.counted >= Math.min(BURST, 2000) && t;
      },
      60_000,
    );
    const seconds = (Date.now() - started) / 1000;
    const budget = LINE_BUDGET.burst + Math.ceil(seconds) * LINE_BUDGET.perSecond;
    assert.ok(seen.ownLines.length >= 1 && seen.ownLines.length + seen.summaries.length <= budget, `${seen.ownLines.length} lines`);
    assert.match(
      seen.summaries[0]!.msg,
      /^homie: \d+ more devices found or gone, not logged one by one \(homie\/5\/meter-\d+\/\$description, .* and \d+ more\)$/,
    );
    const lines = logs.lines.slice(from);
    assert.ok(lines.length < BURST / 10, `${lines.length} lines for ${BURST} valid devices`);
  });
});
