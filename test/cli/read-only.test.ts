// Commands that only read leave the user's broker alone: no Home Assistant birth
// message, nothing at all; the birth message is the daemon's, sent once. And a
// newcomer with an external broker and no devices is told where Hearth looked.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { startMosquitto, type TestBroker } from '../helpers/brokers.js';
import { runGroup, startDaemon } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-read-only-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('read-only commands on a real broker (mosquitto)', () => {
  let broker: TestBroker;
  let watcher: MqttClient;
  /** Every message the broker delivered live (not retained replays) since the watcher subscribed to `#`. */
  const live: Array<{ topic: string; payload: string }> = [];
  let sentinels = 0;
  const db = join(dir, 'h.db');
  const flags = () => ['--mqtt-url', broker.url, '--db', db, '--no-demo'];

  /** Messages published before this returns have reached the watcher: a marker sent after them arrives after them. */
  async function drain(): Promise<void> {
    const n = ++sentinels;
    await watcher.publishAsync('test/sentinel', String(n), { qos: 1 });
    await waitFor(`sentinel ${n}`, () => live.some((m) => m.topic === 'test/sentinel' && m.payload === String(n)), 15_000);
  }
  const notSentinels = () => live.filter((m) => m.topic !== 'test/sentinel');

  before(async () => {
    broker = await startMosquitto();
    watcher = await mqtt.connectAsync(broker.url, { clientId: 'read-only-watcher' });
    watcher.on('message', (topic, payload, packet) => {
      if (!packet.retain) live.push({ topic, payload: payload.toString() });
    });
    await watcher.subscribeAsync('#', { qos: 1 });
  });
  after(async () => {
    await watcher?.endAsync();
    await broker?.stop();
  });

  it('with no device files, `hearth devices` names the sources it looked at and says the demo is off', async () => {
    const r = await runGroup(['devices', ...flags()], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^0 devices, 0 entities/);
    assert.match(
      r.stdout,
      /No devices found\. Looked at: device files \(none: no --devices and no \.\/devices folder\); Home Assistant discovery \(homeassistant\/#\); Zigbee2MQTT \(zigbee2mqtt\/bridge\/devices\); Homie \(homie\/#\)\./,
    );
    assert.match(r.stdout, /The demo home is off \(--demo turns it on/);
  });

  it('`hearth devices`, `tools`, `approvals`, `policy test` publish nothing, not even the birth message', async () => {
    // A discovered device, so discovery is live during the commands.
    await watcher.publishAsync(
      'homeassistant/switch/porch/config',
      JSON.stringify({ name: 'Porch light', unique_id: 'porch', command_topic: 'porch/set', state_topic: 'porch/state' }),
      { retain: true, qos: 1 },
    );
    await watcher.publishAsync('porch/state', 'ON', { retain: true, qos: 1 });
    await drain();
    live.length = 0;
    const devices = await runGroup(['devices', ...flags()], { cwd: dir });
    assert.equal(devices.code, 0, devices.stderr);
    assert.match(devices.stdout, /^Porch light +switch +on +.* porch_light\.porch_light$/m);
    for (const args of [['tools'], ['approvals'], ['policy', 'test', 'chat:alice', 'get_state']]) {
      const r = await runGroup([...args, ...flags()], { cwd: dir });
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    }
    await drain();
    assert.deepEqual(notSentinels(), []);
  });

  it('the daemon sends the birth message and its own status once; commands through it add nothing', async () => {
    live.length = 0;
    const daemon = await startDaemon([...flags(), '--http-port', '0'], { cwd: dir });
    try {
      await waitFor('the birth message', () => live.some((m) => m.topic === 'homeassistant/status'), 15_000);
      const r = await runGroup(['devices', '--db', db, '--verbose'], { cwd: dir });
      assert.match(r.stderr, /using the running daemon/);
      assert.match(r.stdout, /porch/);
      await drain();
      const sent = notSentinels();
      assert.deepEqual(sent[0], { topic: 'homeassistant/status', payload: 'online' });
      // The daemon's own status on its broker (src/mqtt/daemon-status.ts), once; nothing else.
      assert.equal(sent.length, 2, JSON.stringify(sent));
      assert.equal(sent[1].topic, 'hearth/status');
      assert.equal((JSON.parse(sent[1].payload) as { state: string; database: string }).database, db);
    } finally {
      await daemon.stop();
    }
  });
});
