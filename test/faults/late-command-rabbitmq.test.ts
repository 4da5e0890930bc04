// A command must never be applied late (#44). On RabbitMQ a device with a persistent session (clean session off)
// and a QoS 1 command subscription has a durable queue that keeps even Hearth's QoS 0 command while the device is
// away, and hands it over when the device reconnects, long after Hearth answered `unconfirmed`. docs/deployment.md
// ("Commands never arrive late") tells an operator to run a `rabbitmqctl set_policy` giving such queues a message
// TTL; this runs that very command, taken from the page, on a real RabbitMQ node, with a device that really
// keeps its session:
// - without the policy, the command reaches the device when it comes back (the danger the page describes);
// - with it, a command sent while the device is away is gone before Hearth answers, never reaches the device when
//   it comes back, and the next call is confirmed as usual.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import type { Hearth } from '../../src/hearth.js';
import { ROOT } from '../helpers/cli.js';
import { actuatorTool, OWNER, openHearth } from '../helpers/home.js';
import { logSink } from '../helpers/log-sink.js';
import { type RabbitCluster, startRabbitMq } from '../helpers/rabbitmq.js';
import { waitFor } from '../helpers/wait.js';

const SET = 'zigbee2mqtt/hall_light/set';
const STATE = 'zigbee2mqtt/hall_light';
const FILE = `devices:
  - id: hall_light
    name: Hall light
    area: Hall
    entities:
      light:
        kind: light
        name: Hall light
        state_topic: ${STATE}
        value_path: state
        attributes: { brightness: brightness }
        command_topic: ${SET}
        command_format: json
        ranges: { brightness: { min: 0, max: 254, step: 1 } }
`;

/** The `rabbitmqctl set_policy ...` command docs/deployment.md gives, as the arguments a shell would pass. */
function documentedPolicy(): string[] {
  const page = readFileSync(join(ROOT, 'docs', 'deployment.md'), 'utf8');
  const command = /`rabbitmqctl (set_policy [^`]+)`/.exec(page)?.[1];
  assert.ok(command, 'docs/deployment.md gives a rabbitmqctl set_policy command');
  return [...command.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]!);
}

describe('a device with a persistent session on RabbitMQ, away while a command is sent', () => {
  let broker: RabbitCluster;
  let dir: string;
  let hearth: Hearth;
  let device: MqttClient | undefined;
  /** Every command the device received, in order, whichever connection it came on. */
  const received: Array<{ brightness: number }> = [];

  /** The light, as its firmware would be: the same client id each time, clean session off, QoS 1 commands. */
  const connectDevice = async () => {
    const client = mqtt.connect(broker.url, { protocolVersion: 4, clientId: 'hall-light', clean: false, reconnectPeriod: 0 });
    // Listening before the CONNACK: what the broker kept for the session comes right behind it.
    client.on('message', (_topic, payload) => {
      const command = JSON.parse(payload.toString()) as { brightness: number };
      received.push(command);
      // It obeys and reports its new state, as a light does.
      client.publishAsync(STATE, JSON.stringify({ state: 'ON', brightness: command.brightness }), { qos: 1, retain: true }).catch(() => undefined);
    });
    await new Promise<void>((resolve, reject) => {
      client.once('connect', () => resolve());
      client.once('error', reject);
    });
    return client;
  };
  const call = (brightness: number) => hearth.tools.call(actuatorTool(hearth, 'hall_light.light').name, { action: 'turn_on', brightness }, OWNER);

  before(async () => {
    broker = await startRabbitMq();
    dir = mkdtempSync(join(tmpdir(), 'hearth-late-command-'));
    mkdirSync(join(dir, 'devices'));
    writeFileSync(join(dir, 'devices', 'hall.yaml'), FILE);
    device = await connectDevice();
    await device.subscribeAsync(SET, { qos: 1 });
    await device.publishAsync(STATE, JSON.stringify({ state: 'OFF', brightness: 0 }), { qos: 1, retain: true });
    hearth = await openHearth(broker.url, dir, logSink('error').log, { 'mqtt.protocolVersion': '4', 'devices.paths': [join(dir, 'devices')] });
    await waitFor("Hearth has the light's state", () => hearth.bridge.cache.get('hall_light.light')?.value === 'off', 30_000);
  });
  after(async () => {
    await hearth?.close();
    await device?.endAsync(true).catch(() => undefined);
    await broker?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('gets the command late without the documented policy, and never with it', async () => {
    assert.match((await call(10)).text!, /^confirmed/, 'the light answers while connected');

    // Without the policy: away (its session kept), a call goes unanswered, and the command waits in its queue.
    await device!.endAsync();
    assert.match((await call(20)).text!, /^unconfirmed/);
    await waitFor("the command waits in the device's queue", async () => (await broker.heldForLater()) === 1, 30_000);
    device = await connectDevice();
    await waitFor('the command reaches the device when it is back', () => received.some((c) => c.brightness === 20), 30_000);

    // With the policy docs/deployment.md gives.
    await broker.rabbitmqctl(documentedPolicy());
    await device.endAsync();
    assert.match((await call(30)).text!, /^unconfirmed/);
    // Back the moment Hearth answered: the TTL is no longer than the light's confirm timeout, so the command is
    // dead by then.
    device = await connectDevice();
    // A queue hands messages over in order: had the command been kept, it would reach the device before this one.
    assert.match((await call(40)).text!, /^confirmed/, 'the light answers again');
    assert.deepEqual(
      received.map((c) => c.brightness),
      [10, 20, 40],
      'the command sent while the light was away never reached it',
    );
    assert.equal(await broker.heldForLater(), 0, 'nothing left in the queue');
  });
});
