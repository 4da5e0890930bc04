// Finding 3 of issue 15, door 2: `hearth agent rpc` over stdio. The rpc
// process acts for a principal that may operate locks but may not grant
// approvals; answering its own permission_request with allow_once must not
// unlock the door. A real second process (the built dist) on the same broker
// and SQLite file as an in-process demo home (simulator), driven with raw
// JSON-RPC lines; the builtin offline model.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { HEARTH } from '../helpers/cli.js';
import { useHome } from '../helpers/use-home.js';
import { agentRpcArgs, type RpcProcess, startRpcProcess } from '../helpers/agent-rpc.js';
import { FAMILY_OPERATES_LOCKS } from './helpers.js';

describe('security: a session cannot approve its own held unlock (hearth agent rpc door)', { timeout: 120_000 }, () => {
  const home = useHome();
  let rpc: RpcProcess;

  before(async () => {
    assert.ok(existsSync(HEARTH), `build first: ${HEARTH} is missing (npx tsc -p tsconfig.json)`);
    // chat:locksmith may operate locks, so the built-in rule holds unlock for a person; it is no approver.
    home.hearth.policy.setRoles('chat:locksmith', ['family']);
    home.hearth.policy.add(FAMILY_OPERATES_LOCKS);
    rpc = startRpcProcess(
      agentRpcArgs({
        mqttUrl: home.broker.url,
        devices: join(home.dir, 'devices'),
        db: join(home.dir, 'hearth.db'),
        settings: { 'mqtt.protocolVersion': '4', 'tools.shape': 'per-entity' },
      }),
      { env: { HEARTH_PRINCIPAL: 'chat:locksmith' } },
    );
    rpc.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 1, clientInfo: { name: 'security-test', version: '0' } } });
    await rpc.wait('initialize', (m) => m.id === 1);
    rpc.send({ jsonrpc: '2.0', method: 'initialized' });
  });
  home.cleanup(() => rpc?.kill());

  it("an allow_once from the session's own non-approver principal holds the unlock as an approval; nothing is sent", async () => {
    assert.equal(home.hearth.bridge.cache.get('front_door.lock')?.value, 'locked');
    const before = home.commands().length;
    rpc.send({ jsonrpc: '2.0', id: 2, method: 'session/start', params: { cwd: home.dir, permissions: 'jan', ephemeral: true, tools: [] } });
    const started = await rpc.wait('session/start', (m) => m.id === 2);
    assert.ok(started.result, JSON.stringify(started));
    const sessionId = started.result.sessionId as string;
    assert.ok((started.result.tools as string[]).includes('host__front_door_lock'), JSON.stringify(started.result.tools));
    // The rpc process's bridge must know the lock's state before the model looks.
    rpc.send({ jsonrpc: '2.0', id: 3, method: 'turn/start', params: { sessionId, input: 'unlock the front door' } });
    assert.ok((await rpc.wait('turn/start', (m) => m.id === 3)).result);
    const ask = await rpc.wait('item/permission_request', (m) => m.method === 'item/permission_request');
    assert.equal(ask.params.event.tool_name, 'host__front_door_lock');
    rpc.send({ jsonrpc: '2.0', id: 4, method: 'permission/respond', params: { requestId: ask.params.event.request_id, decision: 'allow_once' } });
    assert.deepEqual((await rpc.wait('permission/respond', (m) => m.id === 4)).result, {});
    const result = await rpc.wait('item/tool_result', (m) => m.method === 'item/tool_result');
    await rpc.wait('turn/completed', (m) => m.method === 'turn/completed');
    assert.equal(result.params.event.is_error, true, result.params.event.content);
    assert.match(result.params.event.content, /needs approval/);
    assert.match(result.params.event.content, /chat:locksmith may not approve/);
    assert.match(result.params.event.content, /hearth approve [0-9a-f]+/);
    assert.equal(home.commands().length, before, 'no command was published');
    assert.equal(home.hearth.bridge.cache.get('front_door.lock')?.value, 'locked');
    const held = home.hearth.approvals.list({ status: 'pending' }).find((a) => a.principal === 'chat:locksmith');
    assert.ok(held, 'the call is held as an approval for an approver');
  });
});
