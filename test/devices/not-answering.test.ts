// A device that stopped answering commands stays "not answering" until it answers: a new connection (its
// availability `online`, after its last will) is no answer, however often it comes, and neither is anyone else's
// `online` on its availability topic. Seen as the daemon reports it: GET /api/devices over a real HTTP server and
// `hearth devices`' table. Real broker (aedes, restarted for the failover), real SQLite file, the light a plain
// MQTT client that reconnects as a device does (its will says offline, each connection says online).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { devicesText } from '../../src/cli/devices.js';
import { devices } from '../../src/daemon/methods/devices.js';
import type { Hearth } from '../../src/hearth.js';
import { startHttpServer, type HttpServer } from '../../src/http/server.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { CEILING_LIGHT_ID, ceilingLightEntry } from '../helpers/ceiling-light.js';
import { request } from '../helpers/http-client.js';
import { actuatorTool, OWNER, openHearth } from '../helpers/home.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';

const ID = CEILING_LIGHT_ID;
const LIGHT = `${ID}.light`;
const SET = `lights/${ID}/set`;
const STATE = `lights/${ID}/state`;
const AVAILABILITY = `lights/${ID}/availability`;
const PORCH = 'sensors/porch/temperature';
const FILE = `devices:
${ceilingLightEntry({ state: STATE, set: SET, availability: AVAILABILITY }, 1500)}
  - id: porch
    name: Porch
    entities:
      temperature:
        kind: sensor
        name: Porch temperature
        state_topic: ${PORCH}
`;

interface EntityJson {
  id: string;
  available: boolean | null;
  value: unknown;
  notAnswering: { since: string; cause: string; afterFailover: boolean } | null;
}

describe('a device that reconnects without answering stays "not answering"', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-not-answering-'));
  let broker: TestBroker;
  let hearth: Hearth;
  let server: HttpServer;
  let owner = '';
  let light: MqttClient | undefined;
  let brightness = 1;
  /** Commands the light heard. */
  const heard: string[] = [];

  /**
   * The light's connection: its will says offline; on connecting it subscribes to its commands only when told
   * (a device whose subscription was lost or refused), says online, and reports `report` as its state when given.
   * It answers each command it hears with the new state.
   */
  const connectLight = async (subscribe: boolean, report = false) => {
    const client = await mqtt.connectAsync(broker.url, {
      protocolVersion: 4,
      clientId: `ceiling-${Math.random().toString(16).slice(2, 8)}`,
      reconnectPeriod: 0,
      will: { topic: AVAILABILITY, payload: Buffer.from('offline'), qos: 1, retain: true },
    });
    client.on('message', (_topic, payload) => {
      heard.push(payload.toString());
      brightness = (JSON.parse(payload.toString()) as { brightness: number }).brightness;
      void client.publishAsync(STATE, JSON.stringify({ state: 'ON', brightness }), { qos: 1, retain: true });
    });
    if (subscribe) await client.subscribeAsync(SET, { qos: 0 });
    await client.publishAsync(AVAILABILITY, 'online', { qos: 1, retain: true });
    if (report) await client.publishAsync(STATE, JSON.stringify({ state: 'ON', brightness }), { qos: 1, retain: true });
    return client;
  };
  /** The light as GET /api/devices has it. */
  const api = async (): Promise<EntityJson> => {
    const r = await request(`${server.url}/api/devices`, { token: owner });
    assert.equal(r.status, 200, r.text);
    return (r.json as EntityJson[]).find((e) => e.id === LIGHT)!;
  };
  /** The light drops its connection (its will is read: offline) and comes back: seen by Hearth, over the API. */
  const reconnect = async (subscribe: boolean, report = false) => {
    await light!.endAsync(true);
    await waitFor('the light offline (its will)', async () => (await api()).available === false);
    light = await connectLight(subscribe, report);
    return waitFor('the light online again', async () => {
      const e = await api();
      return e.available === true && e;
    });
  };
  const call = (b: number) => hearth.tools.call(actuatorTool(hearth, LIGHT).name, { action: 'turn_on', brightness: b }, OWNER);

  before(async () => {
    broker = await startAedes();
    mkdirSync(join(dir, 'devices'));
    writeFileSync(join(dir, 'devices', 'home.yaml'), FILE);
    light = await connectLight(true, true);
    hearth = await openHearth(broker.url, dir, logSink('debug').log, { 'devices.paths': [join(dir, 'devices')], 'mqtt.protocolVersion': '4' });
    server = await startHttpServer({ hearth, host: '127.0.0.1', port: 0, log: logSink('warn').log, mounts: [] });
    owner = hearth.tokens.create('owner-phone', 'http:owner').secret;
    hearth.policy.setRoles('http:owner', ['owner']);
    await waitFor('the light online', async () => (await api())?.available === true);
  });
  after(async () => {
    await light?.endAsync(true).catch(() => undefined);
    await server?.close();
    await hearth?.close();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('deaf since a command: three reconnects and a flood of forged "online" leave it not answering; a state report ends it', async () => {
    assert.match((await call(10)).text!, /^confirmed/, 'it answers at first');
    // Its subscription is lost: it is back online, deaf.
    await reconnect(false);
    const silent = await call(20);
    assert.match(silent.text!, /^unconfirmed/, silent.text);
    const marked = await api();
    assert.equal(marked.notAnswering?.cause, 'nothing', JSON.stringify(marked));
    for (let i = 0; i < 3; i++) {
      const back = await reconnect(false);
      assert.deepEqual(back.notAnswering, marked.notAnswering, `reconnect ${i + 1}: still not answering`);
    }
    // Anyone on the broker may say the light is online, as often as they like: no answer either.
    const forger = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    try {
      for (let i = 0; i < 200; i++) void forger.publishAsync(AVAILABILITY, 'online', { qos: 0 });
      // A reading published after the flood, by the same client: once Hearth has it, it has read the flood.
      await forger.publishAsync(PORCH, '21.5', { qos: 1 });
      await waitFor('the porch reading after the flood', async () => {
        const r = await request(`${server.url}/api/devices`, { token: owner });
        return (r.json as EntityJson[]).find((e) => e.id === 'porch.temperature')?.value === 21.5;
      });
    } finally {
      await forger.endAsync(true);
    }
    assert.deepEqual((await api()).notAnswering, marked.notAnswering, 'the flood did not clear it');
    // `hearth devices` says it too.
    assert.match(devicesText(devices(hearth.bridge)), /Ceiling light .*no answer since a command/);
    // A state report from the light itself: it is alive (a call to it would be answered by what it does now).
    await light!.publishAsync(STATE, JSON.stringify({ state: 'ON', brightness }), { qos: 1, retain: true });
    await waitFor('the report to end it', async () => (await api()).notAnswering === null);
  });

  it('deaf since a failover: reconnecting (online, state reported) leaves it not answering; an answered command ends it', async () => {
    // It answers before: the light hears its commands again.
    await reconnect(true, true);
    assert.match((await call(30)).text!, /^confirmed/);
    // The broker restarts: Hearth reconnects (a failover), and the light comes back without its subscription.
    await light!.endAsync(true);
    await waitFor('the light offline (its will)', async () => (await api()).available === false);
    await broker.restart();
    await waitFor('Hearth connected again', () => hearth.bridge.connection.connected && hearth.bridge.connection.lastReconnect);
    light = await connectLight(false, true);
    await waitFor('the light online again', async () => (await api()).available === true);
    const before = heard.length;
    const silent = await call(40);
    assert.match(silent.text!, /^unconfirmed: .*It has not answered since the broker/, silent.text);
    assert.equal(heard.length, before, 'the light heard nothing');
    const marked = await api();
    assert.equal(marked.notAnswering?.cause, 'failover', JSON.stringify(marked));
    assert.equal(marked.notAnswering?.afterFailover, true);
    // It keeps reconnecting, each time online with its state: still no answer to any command.
    for (let i = 0; i < 3; i++) {
      const back = await reconnect(false, true);
      assert.deepEqual(back.notAnswering, marked.notAnswering, `reconnect ${i + 1}: still not answering`);
    }
    assert.match(devicesText(devices(hearth.bridge)), /Ceiling light .*no answer since failover/);
    // Power-cycled with its subscription: the next command is answered, and that ends it.
    await reconnect(true, true);
    assert.notEqual((await api()).notAnswering, null, 'connected afresh, but not answered yet');
    assert.match((await call(50)).text!, /^confirmed/);
    assert.equal((await api()).notAnswering, null);
  });
});
