// Finding 3 of issue 15: a principal that may not grant approvals must not be
// able to approve its own held unlock by answering its session's
// permission_request. Door 1: the HTTP endpoint POST
// /api/sessions/:id/permissions/:rid, on a real HTTP server over a demo home
// (aedes, simulator, SQLite file) with the offline intent model. (Door 2,
// `hearth agent rpc` over stdio, is in self-approval-rpc.test.ts.)
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { waitFor } from '../helpers/wait.js';
import { useHttpHome, OWNER_AND_GUEST } from '../helpers/http-home.js';
import { FAMILY_OPERATES_LOCKS } from './helpers.js';

describe('security: a session cannot approve its own held unlock (HTTP door)', () => {
  const home = useHttpHome({
    tokens: {
      owner: OWNER_AND_GUEST.owner,
      // The locksmith may operate locks (so the built-in rule holds unlock for a person), but is no approver.
      locksmith: { name: 'locksmith', principal: 'http:locksmith', roles: ['family'] },
    },
  });
  const api = (method: string, path: string, token: string, body?: unknown) => home.api(method, path, { token, body, strictJson: true });

  /** Read SSE events until `name`; returns every event seen. */
  async function eventsUntil(res: Response, name: string, seen: Array<{ event: string; data: any }>, reader = res.body!.getReader()) {
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let event = 'message';
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith('event: ')) event = line.slice(7);
          else if (line.startsWith('data: ')) data.push(line.slice(6));
        }
        if (!data.length) continue;
        seen.push({ event, data: JSON.parse(data.join('\n')) });
        if (event === name) return { reader, rest: buffer };
      }
      const chunk = await reader.read();
      if (chunk.done) throw new Error(`stream ended before ${name}; seen: ${seen.map((e) => e.event).join(', ')}`);
      buffer += decoder.decode(chunk.value, { stream: true });
    }
  }

  const lockState = () => home.hearth.bridge.cache.get('front_door.lock')?.value;

  before(() => {
    home.hearth.policy.add(FAMILY_OPERATES_LOCKS);
  });

  async function unlockTurn(token: string) {
    const opened = await api('POST', '/api/sessions', token, { permissions: 'jan', ephemeral: true });
    assert.equal(opened.status, 201, opened.text);
    const id = opened.json.id as string;
    const res = await fetch(`${home.server.url}/api/sessions/${id}/prompt`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ text: 'unlock the front door' }),
      signal: AbortSignal.timeout(20_000),
    });
    assert.equal(res.status, 200);
    const seen: Array<{ event: string; data: any }> = [];
    const { reader } = await eventsUntil(res, 'permission_request', seen);
    const ask = seen.at(-1)!.data;
    assert.equal(ask.tool_name, 'host__front_door_lock');
    return { id, ask, seen, finish: () => eventsUntil(res, 'result', seen, reader) };
  }

  it("refuses a non-approver's own allow_once: nothing is sent, the call is held for an approver, and the answer says who and how", async () => {
    assert.equal(lockState(), 'locked');
    const before = home.commands().length;
    const turn = await unlockTurn(home.secret('locksmith'));
    const answered = await api('POST', `/api/sessions/${turn.id}/permissions/${turn.ask.request_id}`, home.secret('locksmith'), { decision: 'allow_once' });
    assert.equal(answered.status, 200, answered.text);
    await turn.finish();
    const result = turn.seen.find((e) => e.event === 'tool_result')!.data;
    assert.equal(result.is_error, true, result.content);
    assert.match(result.content, /needs approval/);
    // Who may approve, and how.
    assert.match(result.content, /http:locksmith may not approve/);
    assert.match(result.content, /owner/);
    assert.match(result.content, /hearth approve [0-9a-f]+/);
    assert.equal(home.commands().length, before, 'no command was published');
    assert.equal(lockState(), 'locked');

    // The hold is an approval an approver can see and grant; the locksmith still cannot grant it.
    const pending = await api('GET', '/api/approvals?status=pending', home.secret('owner'));
    const approval = pending.json.find((a: { principal: string }) => a.principal === 'http:locksmith');
    assert.ok(approval, pending.text);
    assert.equal(approval.entityId, 'front_door.lock');
    assert.equal((await api('POST', `/api/approvals/${approval.id}`, home.secret('locksmith'), { decision: 'grant' })).status, 403);
    // The audit says the call was held, not approved.
    const row = home.hearth.audit.list({ entityId: 'front_door.lock', order: 'desc', limit: 1 })[0];
    assert.equal(row.principal, 'http:locksmith');
    assert.equal(row.outcome, 'denied');
    assert.doesNotMatch(row.reason, /approved/);

    // Once an owner grants it, the locksmith's same call goes through, once.
    assert.equal((await api('POST', `/api/approvals/${approval.id}`, home.secret('owner'), { decision: 'grant' })).status, 200);
    const again = await unlockTurn(home.secret('locksmith'));
    await api('POST', `/api/sessions/${again.id}/permissions/${again.ask.request_id}`, home.secret('locksmith'), { decision: 'allow_once' });
    await again.finish();
    assert.match(again.seen.find((e) => e.event === 'tool_result')!.data.content, /^confirmed/);
    await waitFor('the door unlocked', () => lockState() === 'unlocked', 5000);
  });

  it("an owner's own allow_once satisfies the confirm rule", async () => {
    const lock = home.hearth.tools.get('front_door_lock')!;
    const { newCall } = await import('../../src/tools/pipeline.js');
    await lock.handler({ action: 'lock' }, newCall({ id: 'http:owner', roles: ['owner'] }, 'front_door_lock'));
    await waitFor('the door locked', () => lockState() === 'locked', 5000);
    const turn = await unlockTurn(home.secret('owner'));
    await api('POST', `/api/sessions/${turn.id}/permissions/${turn.ask.request_id}`, home.secret('owner'), { decision: 'allow_once' });
    await turn.finish();
    const result = turn.seen.find((e) => e.event === 'tool_result')!.data;
    assert.match(result.content, /^confirmed/, result.content);
    assert.equal(lockState(), 'unlocked');
  });
});
