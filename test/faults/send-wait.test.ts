// Calls made while Hearth has lost the broker wait for it (mqtt.send_wait_ms) on one listener of the connection,
// however many there are: 50 calls to 50 plugs (calls to one device wait their turn, so it takes as many devices)
// print no MaxListenersExceededWarning (#44; eleven printed one), and each is sent once the broker is back.
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Aedes } from 'aedes';
import { loadDeviceFiles } from '../../src/devices/loader.js';
import type { Hearth } from '../../src/hearth.js';
import { startSimulator, type Simulator } from '../../src/simulator/simulator.js';
import { OWNER, openHearth } from '../helpers/home.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';

const WAITING = 50;
const plug = (n: number) => `
  - id: plug_${n}
    name: Hallway plug ${n}
    availability: tasmota/plug_${n}/LWT
    entities:
      plug:
        kind: switch
        name: Hallway plug ${n}
        state_topic: tasmota/plug_${n}/stat/POWER
        command_topic: tasmota/plug_${n}/cmnd/POWER
        simulate: { travel_ms: 20 }
`;

describe('many calls waiting for the broker', () => {
  let aedes: Aedes;
  let server: net.Server;
  let hearth: Hearth;
  let sim: Simulator;
  let dir: string;
  /** While set, Hearth's reconnects are refused (the broker is "down" for it; the devices stay connected). */
  let refuse = false;
  const warnings: Error[] = [];
  const onWarning = (w: Error) => warnings.push(w);

  before(async () => {
    aedes = await Aedes.createBroker();
    aedes.authenticate = (client, _u, _p, done) => {
      const hearth = /^hearth-\d/.test(client.id);
      done(null, !(refuse && hearth));
    };
    server = net.createServer((socket) => aedes.handle(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    const url = `mqtt://127.0.0.1:${port}`;
    dir = mkdtempSync(join(tmpdir(), 'hearth-send-wait-'));
    mkdirSync(join(dir, 'devices'));
    writeFileSync(join(dir, 'devices', 'plugs.yaml'), `devices:${Array.from({ length: WAITING }, (_, i) => plug(i + 1)).join('')}`);
    const logs = logSink('info');
    sim = await startSimulator({ url, devices: loadDeviceFiles([join(dir, 'devices')]).devices, log: logs.log });
    hearth = await openHearth(url, dir, logs.log, { 'mqtt.sendWaitMs': '60000', 'devices.paths': [join(dir, 'devices')] });
    await waitFor('every plug has state', () => hearth.bridge.registry.entities().every((e) => hearth.bridge.cache.get(e.id)?.value !== undefined), 30_000);
    process.on('warning', onWarning);
  });
  after(async () => {
    process.off('warning', onWarning);
    await hearth?.close();
    await sim?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await new Promise<void>((resolve) => aedes.close(() => resolve()));
  });

  it('50 calls wait on one listener, print no warning, and are all sent once the broker is back', async () => {
    const connection = hearth.bridge.connection;
    const listenersBefore = connection.listenerCount('state');
    refuse = true;
    const id = connection.client.options.clientId!;
    (aedes as unknown as { clients: Record<string, { close(): void }> }).clients[id]!.close();
    await waitFor('Hearth lost the broker', () => !connection.connected);

    const signals = Array.from({ length: WAITING }, () => new AbortController().signal);
    const calls = signals.map((signal, i) => hearth.tools.call(`hallway_plug_${i + 1}`, { action: 'turn_on' }, OWNER, { requestId: `waiting-${i}`, signal }));
    // A call waiting for the broker listens for its cancellation: every one of the 50 is waiting now.
    await waitFor('every call waiting for the broker', () => signals.every((s) => getEventListeners(s, 'abort').length > 0));
    assert.ok(connection.listenerCount('state') <= listenersBefore + 1, `state listeners: ${connection.listenerCount('state')}`);

    refuse = false;
    const results = await Promise.all(calls);
    for (const [i, r] of results.entries()) assert.doesNotMatch(r.text!, /nothing was sent/, `call ${i}: ${r.text}`);
    assert.equal(hearth.audit.list({ limit: 1000 }).length, WAITING, 'one row per call');
    const leaks = warnings.filter((w) => w.name === 'MaxListenersExceededWarning');
    assert.deepEqual(
      leaks.map((w) => w.message),
      [],
      'no MaxListenersExceededWarning',
    );
    assert.equal(connection.listenerCount('state'), listenersBefore, 'no listener left behind');
  });
});
