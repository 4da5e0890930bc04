// hearth-tool on a bridge connected to a running `hearth start`: the node
// provides its tool to the daemon, so `hearth tools` lists it and `hearth
// call` (through the daemon) gets the flow's answer, with the daemon's policy
// and audit in front. A call the flow leaves unanswered is withdrawn on the
// second output; stopping the flow removes the tool; a token that may not
// provide tools turns the node red with the daemon's reason.
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { runHearth } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';
import { useDaemonForNodes } from './hearth-daemon.js';
import { functionNode, load, nextMessage, unload, waitForStatus } from './support.js';

let viewerToken = '';
const daemon = useDaemonForNodes('nr-daemon-tool', async (cli) => {
  viewerToken = JSON.parse(await cli(['token', 'create', 'viewer', '--principal', 'http:viewer', '--json'])).secret;
  await cli(['policy', 'allow', 'role:owner', '--tool', 'announce', '--note', 'test: owners may announce']);
  await cli(['policy', 'allow', 'role:owner', '--tool', 'slow_tool', '--note', 'test: owners may call the slow tool']);
});
const { dir, dbPath, cli } = daemon;

const ANNOUNCE = {
  type: 'object',
  properties: { text: { type: 'string', minLength: 1 } },
  required: ['text'],
  additionalProperties: false,
};

function flow() {
  return [
    { id: 'bridge', type: 'hearth-bridge', version: 1, mode: 'daemon', daemonUrl: daemon.httpUrl },
    {
      id: 'tool1',
      type: 'hearth-tool',
      z: 'f1',
      bridge: 'bridge',
      toolName: 'announce',
      description: 'Say a sentence on the house speakers.',
      parameters: JSON.stringify(ANNOUNCE),
      capability: 'actuator',
      timeout: 20,
      wires: [['speak', 'calls'], ['cancels']],
    },
    { id: 'speak', type: 'function', z: 'f1', func: "msg.payload = 'announced: ' + msg.payload.text;\nreturn msg;", outputs: 1, wires: [['result']] },
    { id: 'result', type: 'hearth-tool-result', z: 'f1' },
    {
      id: 'tool2',
      type: 'hearth-tool',
      z: 'f1',
      bridge: 'bridge',
      toolName: 'slow_tool',
      description: 'A tool whose flow never answers.',
      parameters: '',
      capability: 'actuator',
      timeout: 1,
      wires: [['calls'], ['cancels']],
    },
    { id: 'calls', type: 'helper', z: 'f1' },
    { id: 'cancels', type: 'helper', z: 'f1' },
  ];
}

async function daemonTools(): Promise<string[]> {
  const res = await fetch(`${daemon.httpUrl}/api/tools`, { headers: { authorization: `Bearer ${daemon.token}` }, signal: AbortSignal.timeout(15_000) });
  return ((await res.json()) as Array<{ name: string }>).map((t) => t.name);
}

afterEach(async () => {
  await unload();
});

describe('hearth-tool on a bridge connected to a daemon', () => {
  it("`hearth call` through the daemon gets the flow's answer; the daemon audits it; stopping the flow removes the tool", async () => {
    await load(flow(), { bridge: { token: daemon.token } }, [functionNode]);
    await waitForStatus('tool1', (s) => s.fill === 'green' && /announce ready|connected/.test(s.text ?? ''), 30_000);
    await waitFor('the daemon lists announce', async () => (await daemonTools()).includes('announce'), 30_000);
    const listed = await cli(['tools']);
    assert.match(listed, /announce/);

    const seen = nextMessage('calls', 30_000, (m) => m.topic === 'announce');
    const out = JSON.parse(await cli(['call', 'announce', '{"text":"dinner is ready"}', '--json']));
    assert.equal(out.text, 'announced: dinner is ready');
    assert.notEqual(out.isError, true);
    const msg = await seen;
    assert.deepEqual(msg.payload, { text: 'dinner is ready' });
    assert.match(msg.toolCall.principal, /^cli:/);
    const db = new Database(dbPath, { readonly: true });
    try {
      const row = db.prepare("SELECT principal, outcome, reason FROM audit WHERE tool = 'announce' ORDER BY id DESC LIMIT 1").get() as Record<string, string>;
      assert.equal(row.outcome, 'confirmed');
      assert.match(row.principal, /^cli:/);
      assert.match(row.reason, /tool of flow:tool1 of http:node-red/);
    } finally {
      db.close();
    }

    // Bad arguments never reach the flow: the daemon refuses them and audits the refusal.
    const bad = await runHearth(['call', 'announce', '{"text":""}', '--json', '--db', dbPath], { cwd: dir });
    assert.match(bad.stdout + bad.stderr, /invalid arguments/);

    await unload();
    await waitFor('the tool is gone from the daemon', async () => !(await daemonTools()).includes('announce'), 30_000);
    assert.doesNotMatch(await cli(['tools']), /announce/);
  });

  it('a call the flow leaves unanswered is withdrawn on the second output; the row is unconfirmed', async () => {
    await load(flow(), { bridge: { token: daemon.token } }, [functionNode]);
    await waitFor('the daemon lists slow_tool', async () => (await daemonTools()).includes('slow_tool'), 30_000);
    const cancelled = nextMessage('cancels', 30_000);
    const r = await runHearth(['call', 'slow_tool', '{}', '--json', '--db', dbPath], { cwd: dir });
    assert.match(r.stdout, /unconfirmed: slow_tool did not answer within 1000 ms/, r.stderr);
    const c = await cancelled;
    assert.equal(c.topic, 'cancelled');
    assert.equal(c.payload.name, 'slow_tool');
    assert.equal(c.payload.reason, 'timeout');
  });

  it('a token that may not provide tools: the node is red with the reason, nothing is registered', async () => {
    await load(flow(), { bridge: { token: viewerToken } }, [functionNode]);
    const s = await waitForStatus('tool1', (x) => x.fill === 'red' && /403|may not provide/.test(x.text ?? ''), 30_000);
    assert.match(s.text ?? '', /403|may not provide/);
    assert.ok(!(await daemonTools()).includes('announce'));
  });
});
