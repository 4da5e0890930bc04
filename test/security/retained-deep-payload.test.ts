// Issue 15, finding 1, as a user meets it: a retained state payload nested
// 5,000 levels deep sits on a demo state topic of a mosquitto broker. `hearth
// start` used to die on it at every start. It must start, log the topic and
// the reason, keep running through a live deep payload too, and answer a tool
// call over MCP.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import mqtt from 'mqtt';
import { freePort, startMosquitto, type TestBroker } from '../helpers/brokers.js';
import { runHearth, spawnHearth, type Spawned } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';

const TOPIC = 'hearth-demo/living_room_climate';
const DEEP = `{"temperature": ${'['.repeat(5000)}${']'.repeat(5000)}}`;

describe('a retained deep payload at start', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-deep-'));
  const db = join(dir, 'h.db');
  let broker: TestBroker;
  let bridge: Spawned | undefined;
  let sim: Spawned | undefined;
  let client: Client | undefined;
  let httpPort: number;

  before(async () => {
    broker = await startMosquitto();
    const pub = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    await pub.publishAsync(TOPIC, DEEP, { qos: 1, retain: true });
    await pub.endAsync();
    httpPort = await freePort();
    // No simulator yet: it would overwrite the retained payload before the bridge reads it.
    bridge = spawnHearth(['start', '--demo', '--no-simulator', '--mqtt-url', broker.url, '--db', db, '--set', `http.port=${httpPort}`], { cwd: dir });
  });
  after(async () => {
    await client?.close().catch(() => undefined);
    await sim?.stop('SIGKILL');
    await bridge?.stop();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('starts, logs the topic and the reason once, keeps running and answers a tool call', async () => {
    await bridge!.waitForOutput('Press Ctrl+C to stop.', 20_000);
    const logged = () =>
      bridge!
        .stderr()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { topic?: string; reason?: string; msg: string })
        .filter((l) => l.topic === TOPIC && /skipped a payload/.test(l.msg));
    const [line] = await waitFor('the refusal logged', () => (logged().length ? logged() : undefined), 15_000);
    assert.equal(line.reason, 'too_deep');
    assert.match(line.msg, /nested deeper than 64 levels/);

    // A live one while it runs, then the simulator, then a call through MCP.
    const pub = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    await pub.publishAsync(TOPIC, DEEP, { qos: 1 });
    await pub.endAsync();
    sim = spawnHearth(['simulate', '--demo', '--mqtt-url', broker.url], { cwd: dir });
    await sim.waitForOutput('Press Ctrl+C to stop.', 20_000);
    const created = await runHearth(['token', 'create', 'tester', '--role', 'owner', '--db', db], { cwd: dir });
    assert.equal(created.code, 0, created.stderr);
    const secret = /hearth_[A-Za-z0-9_-]+/.exec(created.stdout)![0];
    client = new Client({ name: 'security-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${httpPort}/mcp`), { requestInit: { headers: { authorization: `Bearer ${secret}` } } }),
    );
    const result = (await client.callTool({ name: 'living_room_lamp', arguments: { action: 'turn_on' } })) as CallToolResult;
    const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
    assert.equal(result.isError ?? false, false, text);
    assert.match(text, /^confirmed/);
    assert.equal(bridge!.child.exitCode, null, 'the bridge is still running');
    assert.equal(logged().length, 1, 'one line per topic, not one per message');
  });
});
