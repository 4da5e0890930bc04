// The embedded bridge's MQTT TLS from Node-RED's own tls-config node: against
// a real mosquitto that requires a client certificate (mutual TLS), the bridge
// connects with the CA, certificate and key the tls-config node holds; without
// them the same broker refuses it.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { startMultiListenerMosquitto, type MultiListenerMosquitto } from '../helpers/mosquitto-config.js';
import { waitFor } from '../helpers/wait.js';
import { ALL_NODES, helper, node } from './support.js';

const require = createRequire(import.meta.url);
const tlsNode = require('@node-red/nodes/core/network/05-tls.js');

let broker: MultiListenerMosquitto;
const dir = mkdtempSync(join(tmpdir(), 'hearth-nr-tls-'));

before(async () => {
  broker = await startMultiListenerMosquitto();
});
after(async () => {
  await broker?.stop();
  rmSync(dir, { recursive: true, force: true });
});
// Loaded with helper.load directly (the tls-config node is one of Node-RED's own): unloaded the same way.
afterEach(async () => {
  await helper.unload();
});

function bridge(extra: Record<string, unknown>) {
  return {
    id: 'bridge',
    type: 'hearth-bridge',
    version: 1,
    mode: 'embedded',
    broker: broker.urls.mtls,
    demo: 'false',
    devices: '',
    database: join(dir, 'hearth.db'),
    logLevel: 'error',
    ...extra,
  };
}

describe('hearth-bridge TLS from a tls-config node', () => {
  it("connects to a broker that requires a client certificate, with the tls-config node's CA, certificate and key", async () => {
    const tls = {
      id: 'tls',
      type: 'tls-config',
      name: 'home CA',
      cert: broker.pki.clientCert,
      key: broker.pki.clientKey,
      ca: broker.pki.ca,
      certname: '',
      keyname: '',
      caname: '',
      servername: '',
      verifyservercert: true,
    };
    await helper.load([tlsNode, ...ALL_NODES], [tls, bridge({ tls: 'tls' })], {});
    const controller = node('bridge').controller;
    await waitFor('the bridge connected over mutual TLS', () => controller.state === 'connected' || controller.state === 'error', 15_000);
    assert.equal(controller.state, 'connected', `${controller.error ?? ''}\n${broker.log().slice(-1000)}`);
  });

  it('without the tls-config node the same broker refuses it', async () => {
    await helper.load([tlsNode, ...ALL_NODES], [bridge({})], {});
    const controller = node('bridge').controller;
    // Hearth keeps retrying a broker it cannot reach: it reports disconnected (or failed to open), never connected.
    await waitFor('the bridge gave up its first try', () => controller.state === 'disconnected' || controller.state === 'error', 15_000);
    assert.notEqual(controller.state, 'connected');
  });
});
