// hearth-bridge (the config node) in the Node-RED test helper: connection
// status on the nodes that use it, credentials, a bridge that cannot start,
// the embedded broker, and closing on redeploy.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { freePort, startAedes, type TestBroker } from '../helpers/brokers.js';
import { startHome, type TestHome } from '../helpers/home.js';
import { waitFor } from '../helpers/wait.js';
import { bridgeDef, helper, load, nextMessage, node, unload, waitForStatus } from './support.js';

let broker: TestBroker;
let home: TestHome;
const dir = mkdtempSync(join(tmpdir(), 'hearth-nr-bridge-'));

before(async () => {
  broker = await startAedes();
  home = await startHome(broker, { travelMs: 200 });
});
after(async () => {
  await home?.close();
  await broker?.stop();
  rmSync(dir, { recursive: true, force: true });
});
afterEach(async () => {
  await unload();
});

const users = (bridge = 'bridge') => [
  { id: 's1', type: 'hearth-session', z: 'f1', bridge, principal: 'chat:tester', roles: 'owner', wires: [['answer'], []] },
  { id: 'answer', type: 'helper', z: 'f1' },
  { id: 'au', type: 'hearth-audit', z: 'f1', bridge, wires: [[]] },
  { id: 'catcher', type: 'catch', z: 'f1', scope: null, uncaught: false, wires: [['caught']] },
  { id: 'caught', type: 'helper', z: 'f1' },
];

describe('hearth-bridge', () => {
  it('shows connected on every node that uses it; credentials stay out of the flow and reach Hearth', async () => {
    const flow = [bridgeDef(home), ...users()];
    await load(flow, { bridge: { username: 'nr-user', password: 's3cret', apiKey: 'sk-hidden' } });
    await waitForStatus('s1', (s) => s.fill === 'green' && s.shape === 'dot' && /connected/.test(s.text ?? ''));
    await waitForStatus('au', (s) => s.fill === 'green' && /connected/.test(s.text ?? ''));
    const bridge = node('bridge');
    assert.equal(bridge.credentials.username, 'nr-user');
    assert.equal(bridge.credentials.password, 's3cret');
    assert.equal(bridge.credentials.apiKey, 'sk-hidden');
    const hearth = await bridge.controller.ready();
    assert.equal(hearth.bridge.connection.options.username, 'nr-user');
    assert.equal(hearth.bridge.connection.options.password, 's3cret');
    assert.equal(hearth.bridge.config.agent.apiKey, 'sk-hidden');
    assert.equal(hearth.bridge.config.database.path, home.hearth.bridge.config.database.path);
    // What the runtime holds as the flow (what flows.json gets) has no secret.
    const deployed = JSON.stringify(helper._redNodes.getFlows().flows);
    assert.doesNotMatch(deployed, /s3cret|sk-hidden|nr-user/);
    // One Hearth for all of them.
    assert.equal(hearth.bridge.registry.entities().length, 11);
  });

  it('shows disconnected while the broker is not there, and connected once it is', async () => {
    const port = await freePort();
    await load([bridgeDef(home, { broker: `mqtt://127.0.0.1:${port}` }), ...users()]);
    await waitForStatus('s1', (s) => s.fill === 'red' && s.shape === 'ring' && /disconnected/.test(s.text ?? ''));
    const late = await startAedes({ port });
    try {
      await waitForStatus('s1', (s) => s.fill === 'green' && /connected/.test(s.text ?? ''), 15_000);
    } finally {
      await unload();
      await late.stop();
    }
  });

  it('a bridge that cannot start shows the error on its nodes, and their messages go to a Catch node', async () => {
    // A database under a plain file: the folder cannot be made.
    writeFileSync(join(dir, 'a-file'), 'x');
    await load([bridgeDef(home, { database: join(dir, 'a-file', 'hearth.db') }), ...users()]);
    await waitForStatus('s1', (s) => s.fill === 'red' && /error: .*(EEXIST|ENOTDIR)/.test(s.text ?? ''));
    const caught = nextMessage('caught');
    node('s1').receive({ payload: 'turn on the living room lamp' });
    assert.match((await caught).error.message, /hearth-bridge could not start: .*(EEXIST|ENOTDIR)/);
  });

  it('a bad config file is an error on the nodes, naming the file and field', async () => {
    await load([bridgeDef(home, { configFile: join(dir, 'missing.yaml') }), ...users()]);
    await waitForStatus('s1', (s) => s.fill === 'red' && /missing\.yaml/.test(s.text ?? ''));
  });

  it('closes its Hearth on redeploy (sessions, connection, database)', async () => {
    await load([bridgeDef(home), ...users()]);
    await waitForStatus('s1', (s) => /connected/.test(s.text ?? ''));
    const controller = node('bridge').controller;
    const hearth = await controller.ready();
    const answer = nextMessage('answer', 15_000);
    node('s1').receive({ payload: 'what is the temperature in the living room?' });
    await answer;
    const agent = await hearth.agent();
    assert.equal(agent.all().length, 1);
    await unload();
    assert.equal(controller.state, 'closed');
    assert.equal(hearth.db.open, false);
    assert.equal(hearth.bridge.connection.state, 'closed');
    assert.equal(agent.all().length, 0);
    await assert.rejects(controller.ready(), /closed/);
  });

  it('runs the embedded broker and the demo home itself when asked', async () => {
    const port = await freePort();
    await load([
      {
        id: 'bridge',
        type: 'hearth-bridge',
        broker: `mqtt://127.0.0.1:${port}`,
        embedded: true,
        demo: 'true',
        database: join(dir, 'embedded.db'),
        provider: 'intent',
        logLevel: 'error',
      },
      ...users(),
    ]);
    await waitForStatus('s1', (s) => s.fill === 'green' && /connected/.test(s.text ?? ''), 15_000);
    const hearth = await node('bridge').controller.ready();
    assert.equal(hearth.bridge.broker?.url, `mqtt://127.0.0.1:${port}`);
    await waitFor('the demo reports', () => hearth.bridge.cache.get('living_room_lamp.lamp')?.value !== undefined, 5000);
    const answer = nextMessage('answer', 15_000);
    node('s1').receive({ payload: 'turn on the living room lamp' });
    const msg = await answer;
    assert.equal(msg.result.stopReason, 'completed');
    await waitFor('lamp on', () => hearth.bridge.cache.get('living_room_lamp.lamp')?.value === 'on', 5000);
    assert.equal(hearth.audit.get(msg.result.auditIds[0])?.outcome, 'confirmed');
  });
});
