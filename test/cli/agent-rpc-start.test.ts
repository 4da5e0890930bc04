// `hearth agent rpc` with its broker down: it serves at once (a kit client is not
// kept waiting), lists the home tools, says the broker is down, and connects when
// the broker comes up.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { freePort, startAedes, type TestBroker } from '../helpers/brokers.js';
import { spawnGroup } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-rpc-start-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('hearth agent rpc with an unreachable broker', () => {
  let broker: TestBroker | undefined;
  after(async () => {
    await broker?.stop();
  });

  it('answers initialize and session/start, says the broker is down, and connects once it is up', async () => {
    const devices = join(dir, 'devices');
    mkdirSync(devices);
    writeFileSync(
      join(devices, 'fan.yaml'),
      'devices:\n  - id: desk\n    name: Desk\n    entities:\n      fan:\n        kind: switch\n        name: Desk fan\n        state_topic: desk/fan\n        command_topic: desk/fan/set\n',
    );
    const port = await freePort();
    const rpc = spawnGroup(
      [
        'agent',
        'rpc',
        '--mqtt-url',
        `mqtt://127.0.0.1:${port}`,
        '--set',
        'mqtt.reconnectMinMs=100',
        '--set',
        'mqtt.reconnectMaxMs=200',
        '--no-demo',
        '--devices',
        devices,
        '--db',
        join(dir, 'h.db'),
        '--log-level',
        'info',
      ],
      { cwd: dir, stdin: 'pipe' },
    );
    try {
      const answers: Array<{ id?: number; result?: Record<string, unknown> }> = [];
      rpc.child.stdout!.on('data', () => {
        answers.length = 0;
        for (const line of rpc.stdout().split('\n')) if (line.trim()) answers.push(JSON.parse(line) as (typeof answers)[number]);
      });
      const send = (msg: object) => rpc.child.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', ...msg })}\n`);
      send({ id: 1, method: 'initialize', params: { protocolVersion: 1, clientInfo: { name: 'test', version: '1' } } });
      const init = await waitFor('the initialize answer', () => answers.find((a) => a.id === 1), 30_000);
      assert.equal(init.result?.protocolVersion, 1);
      send({ method: 'initialized' });
      send({ id: 2, method: 'session/start', params: { cwd: dir, ephemeral: true } });
      const started = await waitFor('the session/start answer', () => answers.find((a) => a.id === 2), 30_000);
      // The home is there (actuators wait for a policy rule; the read tool knows the fan).
      assert.deepEqual(started.result?.tools, ['host__get_state', 'host__get_history', 'host__get_audit', 'host__explain_policy']);
      assert.match(JSON.stringify(started.result?.toolSpecs), /"enum":\["desk\.fan"\]/);
      assert.match(rpc.stderr(), /not connected to the broker yet; home tools report it as down until it connects/);
      broker = await startAedes({ port });
      await rpc.waitFor('MQTT connected', 'stderr', 30_000);
    } finally {
      rpc.child.stdin!.end();
      await rpc.stop();
    }
  });
});
