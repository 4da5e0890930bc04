// The controller behind hearth-tool on a daemon bridge, without Node-RED,
// against a real Hearth HTTP server: the tool is provided while the stream is
// open; when the server goes away the waiting call is withdrawn on both sides
// (the daemon's row says failed, the flow gets `interrupted`) and the tool is
// provided again once the server is back; the token's revocation ends it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startHttpServer, type HttpServer } from '../../src/http/server.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { startHome, type TestHome } from '../helpers/home.js';
import { waitFor } from '../helpers/wait.js';
import { DaemonClient } from '../../nodes/lib/daemon.js';
import type { CallInfo } from '../../nodes/lib/flow-tools.js';
import { answerRemoteCall, isRemoteCall, RemoteFlowTool, type RemoteToolState } from '../../nodes/lib/remote-flow-tools.js';

describe('RemoteFlowTool', () => {
  let broker: TestBroker;
  let home: TestHome;
  let server: HttpServer | undefined;
  let port = 0;
  let token = '';
  const owner = { id: 'chat:tester', roles: ['owner'] };

  const serve = async () => {
    server = await startHttpServer({ hearth: home.hearth, host: '127.0.0.1', port, log: home.logs.log.child({ part: 'http' }) });
    port = server.port;
  };

  before(async () => {
    broker = await startAedes();
    home = await startHome(broker);
    home.hearth.policy.add({ subject: 'role:owner', targetType: 'tool', target: 'chime', action: 'actuate', effect: 'allow', note: 'test' });
    token = home.hearth.tokens.create('node-red', 'http:node-red').secret;
    home.hearth.policy.setRoles('http:node-red', ['owner']);
    await serve();
  });
  after(async () => {
    await server?.close();
    await home?.close();
    await broker?.stop();
  });

  function tool(secret: string) {
    const calls: Array<{ args: Record<string, unknown>; info: CallInfo }> = [];
    const cancels: Array<{ info: CallInfo; reason: string }> = [];
    const states: Array<{ state: RemoteToolState; detail?: string }> = [];
    const daemon = new DaemonClient({ url: `http://127.0.0.1:${port}`, token: secret });
    const remote = new RemoteFlowTool(
      daemon,
      {
        name: 'chime',
        description: 'Ring the door chime.',
        parameters: { type: 'object', properties: {} },
        capability: 'actuator',
        timeoutMs: 30_000,
        source: 'flow:chime',
      },
      {
        call: (args, info) => calls.push({ args, info }),
        cancelled: (info, reason) => cancels.push({ info, reason }),
        state: (state, detail) => states.push({ state, detail }),
      },
      { minMs: 50, maxMs: 200 },
    );
    return { remote, daemon, calls, cancels, states };
  }

  it('provides the tool, answers a call, and comes back after the server went away; the waiting call fails on both sides', async () => {
    const t = tool(token);
    try {
      await t.remote.start();
      assert.ok(t.remote.registered, JSON.stringify(t.states));
      let calling = home.hearth.tools.call('chime', {}, owner);
      await waitFor('the call reached the flow', () => t.calls.length === 1);
      assert.ok(isRemoteCall(t.calls[0].info.id));
      await answerRemoteCall(t.calls[0].info.id, { text: 'ding dong' });
      assert.equal((await calling).text, 'ding dong');
      assert.ok(!isRemoteCall(t.calls[0].info.id));

      calling = home.hearth.tools.call('chime', {}, owner);
      await waitFor('the second call reached the flow', () => t.calls.length === 2);
      await server!.close();
      server = undefined;
      const failed = await calling;
      assert.equal(failed.isError, true);
      assert.match(failed.text!, /the Node-RED flow that provides tool chime disconnected/);
      assert.equal(home.hearth.audit.get(failed.details!.auditId as number)!.outcome, 'failed');
      assert.equal(home.hearth.tools.get('chime'), undefined, 'the tool went with the stream');
      await waitFor('the flow is told', () => t.cancels.some((c) => c.info.id === t.calls[1].info.id && c.reason === 'interrupted'));
      await assert.rejects(answerRemoteCall(t.calls[1].info.id, { text: 'too late' }), /no tool call/);

      await serve();
      await waitFor('provided again', () => !!home.hearth.tools.get('chime') && t.remote.registered, 15_000);
      calling = home.hearth.tools.call('chime', {}, owner);
      await waitFor('a call after the reconnect', () => t.calls.length === 3);
      await answerRemoteCall(t.calls[2].info.id, { text: 'ding again' });
      assert.equal((await calling).text, 'ding again');
    } finally {
      t.remote.close();
      t.daemon.close();
    }
    await waitFor('closed: the daemon removed it', () => !home.hearth.tools.get('chime'));
  });

  it('an answer the daemon refuses (too large) fails the call at once with the reason, and the flow hears of it', async () => {
    const t = tool(token);
    try {
      await t.remote.start();
      const calling = home.hearth.tools.call('chime', {}, owner);
      await waitFor('the call reached the flow', () => t.calls.length === 1);
      await assert.rejects(answerRemoteCall(t.calls[0].info.id, { text: 'x'.repeat(70_000) }), /400 the answer is \d+ bytes, more than 65536/);
      const result = await calling;
      assert.equal(result.isError, true);
      assert.match(result.text!, /failed: the flow's answer was refused: .*more than 65536/);
      assert.equal(home.hearth.audit.get(result.details!.auditId as number)!.outcome, 'failed');
    } finally {
      t.remote.close();
      t.daemon.close();
    }
    await waitFor('closed: the daemon removed it', () => !home.hearth.tools.get('chime'));
  });

  it('a token that may not provide tools is refused once, not retried; nothing is provided', async () => {
    const guest = home.hearth.tokens.create('guest-red', 'http:guest-red').secret;
    const t = tool(guest);
    try {
      await t.remote.start();
      assert.equal(t.remote.registered, false);
      const refused = t.states.find((s) => s.state === 'refused');
      assert.match(refused?.detail ?? '', /403 http:guest-red may not provide tools/);
      assert.equal(home.hearth.tools.get('chime'), undefined);
    } finally {
      t.remote.close();
      t.daemon.close();
    }
  });

  it("revoking the provider's token removes its tool at once", async () => {
    const secret = home.hearth.tokens.create('short-red', 'http:short-red').secret;
    home.hearth.policy.setRoles('http:short-red', ['owner']);
    const t = tool(secret);
    try {
      await t.remote.start();
      assert.ok(home.hearth.tools.get('chime'));
      home.hearth.tokens.revoke('short-red');
      await waitFor('the tool is gone', () => !home.hearth.tools.get('chime'));
      await waitFor('the node is told it may not come back', () => t.states.some((s) => s.state === 'refused' && /401/.test(s.detail ?? '')), 15_000);
    } finally {
      t.remote.close();
      t.daemon.close();
    }
  });
});
