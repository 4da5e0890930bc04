// Issue 40: an embedded-broker account held to subscribe `plugs/+` could subscribe `plugs/#` and read every
// deeper topic (the check asked whether the allowed filter matched the requested one as if it were a topic). A
// requested filter is allowed only when every topic it can match is allowed. A real embedded broker (aedes).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { Bridge } from '../../src/bridge.js';
import { loadConfig } from '../../src/config/load.js';
import { grantedQos } from '../helpers/broker-clients.js';
import { logSink } from '../helpers/log-sink.js';

describe('security: an embedded-broker account reads only what its subscribe filters cover', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-subscribe-filters-'));
  let bridge: Bridge | undefined;
  let plug: MqttClient | undefined;

  before(async () => {
    const { config } = loadConfig({
      cwd: dir,
      env: {},
      flags: {
        'mqtt.embedded.port': '0',
        'database.path': join(dir, 'hearth.db'),
        'devices.paths': [],
        demo: false,
        'mqtt.embedded.accounts': JSON.stringify([{ username: 'plug', password: 'plug-secret-123', subscribe: ['plugs/+', 'cmnd/plug-1/#'] }]),
      } as never,
    });
    bridge = await Bridge.start({ config, log: logSink('warn').log, embedBroker: true, connectWaitMs: 5000 });
    plug = await mqtt.connectAsync(bridge.broker!.url, { protocolVersion: 4, reconnectPeriod: 0, username: 'plug', password: 'plug-secret-123' });
  });
  after(async () => {
    await plug?.endAsync(true);
    await bridge?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('plugs/+ lets it subscribe to plugs/one and plugs/+, never plugs/# or plugs/+/+', async () => {
    assert.equal(await grantedQos(plug!, 'plugs/one'), 0);
    assert.equal(await grantedQos(plug!, 'plugs/+'), 0);
    assert.equal(await grantedQos(plug!, 'plugs/#'), 128, 'plugs/# also matches plugs/one/secret');
    assert.equal(await grantedQos(plug!, 'plugs/+/+'), 128);
    assert.equal(await grantedQos(plug!, '#'), 128);
  });

  it('cmnd/plug-1/# lets it subscribe to cmnd/plug-1 and anything below; not $SYS', async () => {
    assert.equal(await grantedQos(plug!, 'cmnd/plug-1'), 0);
    assert.equal(await grantedQos(plug!, 'cmnd/plug-1/+/power'), 0);
    assert.equal(await grantedQos(plug!, 'cmnd/+/power'), 128);
    assert.equal(await grantedQos(plug!, '$SYS/#'), 128);
  });
});
