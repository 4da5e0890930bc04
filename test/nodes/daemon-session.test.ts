// hearth-session on a bridge connected to a running daemon: the turn runs in
// `hearth start` as the token's principal (the lamp's audit row is the
// daemon's, with that principal), an unlock a confirm rule holds waits for the
// bridge's hearth-approval node and goes through on its yes, and a refused
// token or a daemon that stopped reaches a Catch node in words.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { freePort } from '../helpers/brokers.js';
import { runGroup, startDaemon, type GroupProcess } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';
import { collect, load, nextMessage, node, unload, waitForStatus } from './support.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-nr-dsession-'));
const dbPath = join(dir, 'hearth.db');
let daemon: GroupProcess | undefined;
let httpUrl = '';
let token = '';
let guestToken = '';

function flow() {
  return [
    { id: 'bridge', type: 'hearth-bridge', version: 1, mode: 'daemon', daemonUrl: httpUrl },
    { id: 'sess', type: 'hearth-session', z: 'f1', version: 1, bridge: 'bridge', ask: 'confirm', wires: [['answers'], ['events']] },
    { id: 'answers', type: 'helper', z: 'f1' },
    { id: 'events', type: 'helper', z: 'f1' },
    { id: 'ap', type: 'hearth-approval', z: 'f1', bridge: 'bridge', sendDecided: true, wires: [['requests'], ['decisions']] },
    { id: 'requests', type: 'helper', z: 'f1' },
    { id: 'decisions', type: 'helper', z: 'f1' },
    { id: 'catcher', type: 'catch', z: 'f1', scope: null, uncaught: false, wires: [['caught']] },
    { id: 'caught', type: 'helper', z: 'f1' },
  ];
}

/** The daemon's audit row (its outcome lands once the device's state confirms it). */
function auditRow(id: number) {
  const db = new Database(dbPath, { readonly: true });
  try {
    return db.prepare('SELECT principal, outcome, tool, action FROM audit WHERE id = ?').get(id) as Record<string, unknown> | undefined;
  } finally {
    db.close();
  }
}

before(async () => {
  const created = await runGroup(['token', 'create', 'node-red', '--principal', 'http:node-red', '--role', 'owner', '--json', '--db', dbPath], { cwd: dir });
  assert.equal(created.code, 0, created.stderr);
  token = JSON.parse(created.stdout).secret;
  // A principal who may unlock only with a person's yes, and who may not grant approvals itself.
  const guest = await runGroup(['token', 'create', 'guest', '--principal', 'http:guest', '--json', '--db', dbPath], { cwd: dir });
  assert.equal(guest.code, 0, guest.stderr);
  guestToken = JSON.parse(guest.stdout).secret;
  const rule = await runGroup(
    ['policy', 'confirm', 'http:guest', '--tool', 'front_door_lock', '--action', 'unlock', '--note', 'test: a guest unlocks with a yes', '--db', dbPath],
    { cwd: dir },
  );
  assert.equal(rule.code, 0, rule.stderr);
  const brokerPort = await freePort();
  daemon = await startDaemon(['--broker-port', String(brokerPort), '--db', dbPath, '--set', 'http.port=0', '--log-level', 'warn'], { cwd: dir });
  httpUrl = /http\s+(http:\/\/\S+)/.exec(daemon.stdout())![1].replace(/\/$/, '');
});

after(async () => {
  await daemon?.stop();
  rmSync(dir, { recursive: true, force: true });
});

afterEach(async () => {
  await unload();
});

describe('hearth-session on a bridge connected to a daemon', () => {
  it("answers a prompt by switching the lamp in the daemon, audited as the token's principal", async () => {
    await load(flow(), { bridge: { token } });
    await waitForStatus('sess', (s) => s.fill === 'green' && /connected/.test(s.text ?? ''));
    const events = collect('events');
    const answer = nextMessage('answers', 60_000);
    node('sess').receive({ payload: 'turn on the living room lamp', topic: 'kitchen-tablet' });
    const msg = await answer;
    assert.equal(typeof msg.payload, 'string');
    assert.ok(msg.payload.length > 0, 'an answer in words');
    assert.equal(msg.result.stopReason, 'completed');
    assert.equal(msg.result.principal, 'http:node-red');
    assert.match(msg.session, /kitchen-tablet/);
    const call = msg.result.toolCalls.find((c: { name: string }) => c.name === 'living_room_lamp');
    assert.ok(call, `the lamp was called: ${JSON.stringify(msg.result.toolCalls)}`);
    assert.equal(msg.result.auditIds.length, 1);
    await waitFor("the lamp's row confirmed", () => auditRow(msg.result.auditIds[0])?.outcome === 'confirmed', 20_000);
    assert.deepEqual(auditRow(msg.result.auditIds[0]), { principal: 'http:node-red', outcome: 'confirmed', tool: 'living_room_lamp', action: 'turn_on' });
    await waitFor('the events output saw the turn end', () => events.some((e) => e.topic === 'done'), 10_000);
    assert.ok(events.some((e) => e.topic === 'tool_call' && e.session === msg.session && e.principal === 'http:node-red'));
    await waitForStatus('sess', (s) => s.fill === 'green' && /done/.test(s.text ?? ''));
  });

  it('an unlock a confirm rule holds waits for the hearth-approval node, and its yes lets it through', async () => {
    await load(flow(), { bridge: { token } });
    await waitForStatus('sess', (s) => s.fill === 'green' && /connected/.test(s.text ?? ''));
    const requested = nextMessage('requests', 60_000, (m) => m.topic === 'requested' && m.payload.tool === 'front_door_lock');
    const answer = nextMessage('answers', 90_000);
    node('sess').receive({ payload: 'unlock the front door' });
    const req = await requested;
    assert.equal(req.payload.kind, 'permission');
    assert.equal(req.payload.principal, 'http:node-red');
    assert.equal(req.payload.args.action, 'unlock');
    await waitForStatus('sess', (s) => s.fill === 'yellow' && /waiting for approval/.test(s.text ?? ''));
    const decided = nextMessage('decisions', 20_000);
    node('ap').receive({ payload: 'allow_once', requestId: req.requestId });
    assert.equal((await decided).payload.status, 'allow_once');
    const msg = await answer;
    assert.equal(msg.result.stopReason, 'completed');
    const call = msg.result.toolCalls.find((c: { name: string }) => c.name === 'front_door_lock');
    assert.ok(call && !call.isError, `the unlock went through: ${JSON.stringify(msg.result.toolCalls)}`);
    await waitFor("the unlock's row confirmed", () => auditRow(call.auditId)?.outcome === 'confirmed', 20_000);
    assert.deepEqual(auditRow(call.auditId), { principal: 'http:node-red', outcome: 'confirmed', tool: 'front_door_lock', action: 'unlock' });
  });

  it("a yes through the approval node does not satisfy a confirm rule when the token's principal may not approve (the daemon decides)", async () => {
    await load(flow(), { bridge: { token: guestToken } });
    await waitForStatus('sess', (s) => s.fill === 'green' && /connected/.test(s.text ?? ''));
    const requested = nextMessage('requests', 60_000, (m) => m.topic === 'requested' && m.payload.kind === 'permission');
    const answer = nextMessage('answers', 90_000);
    node('sess').receive({ payload: 'unlock the front door', topic: 'guest' });
    const req = await requested;
    assert.equal(req.payload.principal, 'http:guest');
    node('ap').receive({ payload: 'allow_once', requestId: req.requestId });
    const msg = await answer;
    const call = msg.result.toolCalls.find((c: { name: string }) => c.name === 'front_door_lock');
    assert.ok(call?.isError, `the unlock was not done: ${JSON.stringify(msg.result.toolCalls)}`);
    assert.match(call.result, /does not count: http:guest may not approve/);
    assert.equal(msg.result.approvalIds.length, 1, 'held for an approver instead');
  });

  it('msg.interrupt stops a turn waiting for approval in the daemon; the request is withdrawn', async () => {
    await load(flow(), { bridge: { token } });
    await waitForStatus('sess', (s) => s.fill === 'green' && /connected/.test(s.text ?? ''));
    const requested = nextMessage('requests', 60_000, (m) => m.topic === 'requested' && m.payload.kind === 'permission');
    const answer = nextMessage('answers', 60_000);
    node('sess').receive({ payload: 'unlock the front door', topic: 'interrupted' });
    const req = await requested;
    const withdrawn = nextMessage('requests', 30_000, (m) => m.topic === 'decided' && m.requestId === req.requestId);
    node('sess').receive({ interrupt: true, topic: 'interrupted' });
    const msg = await answer;
    assert.equal(msg.result.stopReason, 'interrupted');
    assert.equal((await withdrawn).payload.status, 'cancelled');
    await waitForStatus('sess', (s) => /interrupted/.test(s.text ?? ''));
  });

  it('a held unlock without an approval node is not done, and says so', async () => {
    await load(
      flow().filter((n) => n.id !== 'ap'),
      { bridge: { token } },
    );
    await waitForStatus('sess', (s) => s.fill === 'green' && /connected/.test(s.text ?? ''));
    const answer = nextMessage('answers', 60_000);
    node('sess').receive({ payload: 'unlock the front door', topic: 'no-approver' });
    const msg = await answer;
    const call = msg.result.toolCalls.find((c: { name: string }) => c.name === 'front_door_lock');
    assert.ok(call?.isError, `the unlock was held: ${JSON.stringify(msg.result.toolCalls)}`);
    assert.equal(msg.result.approvalIds.length, 1, 'the hold has an approval id to grant later');
  });

  it("a msg.principal other than the token's is refused in words", async () => {
    await load(flow(), { bridge: { token } });
    await waitForStatus('sess', (s) => s.fill === 'green' && /connected/.test(s.text ?? ''));
    const caught = collect('caught');
    node('sess').receive({ payload: 'turn on the living room lamp', principal: 'chat:mallory' });
    await waitFor('the refusal', () => caught.length >= 1, 10_000);
    assert.match(caught[0].error.message, /token's principal \(http:node-red\).*chat:mallory/);
  });

  it('a refused token reaches a Catch node with the reason', async () => {
    await load(flow(), { bridge: { token: 'not-a-token' } });
    const caught = collect('caught');
    node('sess').receive({ payload: 'turn on the living room lamp' });
    await waitFor('the refusal', () => caught.length >= 1, 20_000);
    assert.match(caught[0].error.message, /401/);
    assert.match(caught[0].error.message, /refused the token/);
    await waitForStatus('sess', (s) => s.fill === 'red');
  });

  // Last: it stops the daemon.
  it('a daemon that stops mid-turn, and one that is gone, reach a Catch node in words', async () => {
    await load(flow(), { bridge: { token } });
    await waitForStatus('sess', (s) => s.fill === 'green' && /connected/.test(s.text ?? ''));
    const caught = collect('caught');
    const requested = nextMessage('requests', 60_000, (m) => m.topic === 'requested' && m.payload.kind === 'permission');
    node('sess').receive({ payload: 'unlock the front door', topic: 'stopping' });
    await requested;
    await daemon!.stop();
    await waitFor('the broken turn', () => caught.length >= 1, 20_000);
    assert.match(caught[0].error.message, /went away during the turn/);
    await waitForStatus('sess', (s) => s.fill === 'red');
    node('sess').receive({ payload: 'turn on the living room lamp' });
    await waitFor('the failure', () => caught.length >= 2, 20_000);
    assert.match(caught[1].error.message, /did not answer.*hearth start/);
    assert.ok(caught[1].error.message.includes(httpUrl), 'names the URL');
  });
});
