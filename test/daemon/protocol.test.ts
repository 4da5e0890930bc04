// The control protocol as data: a program that is not Hearth's command line drives the running daemon with
// JSON lines and gets typed answers (devices with their state, a call's outcome and audit row, the audit tail,
// a held call, its approval, a chat turn's events) that it can check without reading any text meant for people.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../helpers/brokers.js';
import { rawControl, type RawControl } from '../helpers/control.js';
import { startDaemon, type GroupProcess } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-protocol-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('the control protocol, driven as data', () => {
  const db = join(dir, 'h.db');
  let daemon: GroupProcess;
  let c: RawControl;

  before(async () => {
    daemon = await startDaemon(['--broker-port', String(await freePort()), '--http-port', '0', '--db', db], { cwd: dir });
    c = await rawControl(`${db}.sock`);
  });
  after(async () => {
    c?.socket.destroy();
    await daemon?.stop();
  });

  it('hello says the protocol version, the database and the home', async () => {
    const { result } = await c.request('hello');
    assert.equal(result.protocol, 2);
    assert.equal(result.database, db);
    assert.equal(result.home.demo, true);
  });

  it('devices answers each entity with its state as data and in words', async () => {
    const lamp = await waitFor('the demo lamp reported', async () => {
      const { result } = await c.request('devices');
      const e = (result as Array<{ entities: Array<Record<string, unknown>> }>).flatMap((d) => d.entities).find((x) => x.id === 'living_room_lamp.lamp');
      return e?.value !== null ? e : undefined;
    });
    assert.equal(lamp!.kind, 'switch');
    assert.ok(['on', 'off'].includes(String(lamp!.value).toLowerCase()), String(lamp!.value));
    assert.equal(typeof lamp!.words, 'string');
  });

  it('call answers with the outcome and its audit row, which audit.tail then lists', async () => {
    const { result, error } = await c.request('call', { tool: 'living_room_lamp', args: { action: 'turn_on' } });
    assert.equal(error, undefined);
    assert.equal(result.isError, false);
    assert.equal(result.outcome, 'confirmed');
    const auditId = result.auditId as number;
    assert.equal(result.details.auditId, auditId);
    assert.ok(Number.isInteger(auditId));
    const tail = await c.request('audit.tail', { lines: 5, entity: 'living_room_lamp.lamp' });
    const row = (tail.result as Array<{ id: number; outcome: string; outcomeWord: string; principal: string }>).find((r) => r.id === auditId);
    assert.ok(row, 'the call is in the tail');
    assert.equal(row!.outcome, 'confirmed');
    assert.equal(row!.outcomeWord, 'confirmed');
    assert.match(row!.principal, /^cli:/);
  });

  it('a call a confirm rule holds answers held, and approvals/approve/deny answer with the approval as data', async () => {
    const held = await c.request('call', { tool: 'front_door_lock', args: { action: 'unlock' }, as: 'chat:guest', role: ['owner'] });
    assert.equal(held.result.isError, true);
    assert.equal(held.result.outcomeWord, 'held');
    const pending = (await c.request('approvals')).result as Array<{ id: string; principal: string; tool: string; status: string }>;
    const mine = pending.find((a) => a.principal === 'chat:guest' && a.tool === 'front_door_lock');
    assert.ok(mine, JSON.stringify(pending));
    assert.equal(mine!.status, 'pending');
    const tail = (await c.request('audit.tail', { lines: 5, principal: 'chat:guest' })).result as Array<{ outcome: string; outcomeWord: string }>;
    assert.deepEqual(
      tail.map((r) => [r.outcome, r.outcomeWord]),
      [['denied', 'held']],
    );
    const denied = await c.request('deny', { id: mine!.id, by: 'cli:tester' });
    assert.equal(denied.result.decision, 'denied');
    assert.equal(denied.result.approval.status, 'denied');
    assert.equal(denied.result.approval.decidedBy, 'cli:tester');
    // Decided once: a second decision is refused with a code a program can tell apart from bad input.
    const again = await c.request('approve', { id: mine!.id });
    assert.equal(again.error?.code, -32005);
    assert.match(again.error!.message, /already denied by cli:tester/);
    const missing = await c.request('approve', { id: 'abcdef123456' });
    assert.equal(missing.error?.code, -32004);
  });

  it('a caller that names no valid principal, or asks for what is not there, gets an error naming it', async () => {
    const bad = await c.request('call', { tool: 'living_room_lamp', args: {}, as: 'root' });
    assert.equal(bad.error?.code, -32602);
    assert.match(bad.error!.message, /^as "root"/);
    const since = await c.request('audit.tail', { since: 'yesterday' });
    assert.equal(since.error?.code, -32602);
    assert.match(since.error!.message, /audit.tail: param "since" must be an ISO time/);
  });

  it('the chat stream carries a turn as events, and says where the conversation is saved', async () => {
    const chat = await rawControl(`${db}.sock`);
    try {
      const opened = await chat.request('chat', {});
      assert.equal(opened.result.streaming, 'chat');
      assert.match(opened.result.principal, /^cli:/);
      chat.write({ say: 'turn off the living room lamp' });
      const seen: any[] = [];
      for (;;) {
        const m = await chat.next();
        seen.push(m);
        if (m.turn) break;
      }
      const call = seen.find((m) => m.event?.type === 'tool_call');
      assert.equal(call.event.name, 'host__living_room_lamp');
      assert.ok(seen.some((m) => m.event?.type === 'tool_result' && !m.event.is_error));
      assert.equal(seen.at(-1).turn.stopReason, 'completed');
      chat.write({ nonsense: true });
      assert.match((await chat.next()).problem, /unknown message/);
      chat.write({ bye: true });
      const end = await chat.next();
      assert.equal(end.end.saved, true);
      assert.equal(typeof end.end.session, 'string');
    } finally {
      chat.socket.destroy();
    }
  });
});
