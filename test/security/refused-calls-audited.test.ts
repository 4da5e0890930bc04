// Issue 40 (low): refused agent-path calls (an unknown tool, malformed arguments, a tool not offered to the
// caller) left no audit row, while the HTTP tool door wrote `failed` rows for bad arguments. Every door now
// records a refused actuator attempt one way (ToolSet.refuse): the agent (a fake model on the OpenAI wire
// through the assembly's engine), the HTTP tool door and MCP's unknown tool. A real broker and SQLite file.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AgentEvent } from '../../src/agent/types.js';
import type { Principal } from '../../src/tools/types.js';
import { textChunks, toolCallChunks } from '../helpers/openai-server.js';
import { useHttpHome } from '../helpers/http-home.js';
import { agentOnModel, useModel } from '../helpers/use-model.js';

/** A guest: offered reads only (no rule lets guests act), so the garage door's tool is not offered to them. */
const GUEST: Principal = { id: 'chat:guest-ann', roles: ['guest'] };
const OWNER: Principal = { id: 'chat:owner-bo', roles: ['owner'] };

describe('security: a refused actuator attempt leaves a failed row at every door', () => {
  const model = useModel();
  const home = useHttpHome({ settings: () => agentOnModel(model.url) });

  /** One turn in which the model makes `call`; returns what the tool answered. */
  async function modelCalls(principal: Principal, call: { name: string; arguments: unknown }): Promise<string> {
    model.setScript([toolCallChunks([call]), textChunks('Done.')]);
    const agent = await home.hearth.agent();
    const session = await agent.open({ principal, permissions: 'host', ephemeral: true });
    try {
      const turn = await agent.prompt(session, 'do it');
      const results: string[] = [];
      for await (const e of turn as AsyncIterable<AgentEvent>) if (e.type === 'tool_result') results.push(e.content);
      assert.equal(results.length, 1, JSON.stringify(results));
      return results[0]!;
    } finally {
      await session.close();
    }
  }

  /** The newest audit row of this principal. */
  const lastRow = (principal: string) => home.hearth.audit.list({ principal, order: 'desc', limit: 1 })[0];

  const cases: Array<{ name: string; who: Principal; call: { name: string; arguments: unknown }; said: RegExp; tool: string }> = [
    {
      name: 'an unknown tool',
      who: OWNER,
      call: { name: 'host__front_door_unlock_now', arguments: { action: 'unlock' } },
      said: /unknown tool/,
      tool: 'host__front_door_unlock_now',
    },
    {
      name: 'arguments that are no JSON object',
      who: OWNER,
      call: { name: 'host__garage_door', arguments: '{"action": "open"' },
      said: /not a JSON object/,
      tool: 'garage_door',
    },
    {
      name: 'arguments that do not fit the schema',
      who: OWNER,
      call: { name: 'host__garage_door', arguments: { action: 'explode' } },
      said: /invalid arguments/,
      tool: 'garage_door',
    },
    {
      name: 'a tool not offered to the caller',
      who: GUEST,
      call: { name: 'host__garage_door', arguments: { action: 'open' } },
      said: /unknown tool/,
      tool: 'garage_door',
    },
  ];
  for (const c of cases) {
    it(`agent: ${c.name} is refused, and the attempt is a failed row`, async () => {
      const before = home.hearth.audit.list({ order: 'desc', limit: 1 })[0]?.id ?? 0;
      const said = await modelCalls(c.who, c.call);
      assert.match(said, c.said);
      const row = lastRow(c.who.id);
      assert.ok(row && row.id > before, `no audit row for the refused attempt (${said})`);
      assert.equal(row.outcome, 'failed');
      assert.equal(row.tool, c.tool);
      assert.match(row.error ?? '', c.said);
      assert.deepEqual(home.commands(), [], 'nothing was sent');
    });
  }

  it('HTTP: an unknown tool (404), a tool not offered (403) and arguments that are no object (400) leave the same failed row', async () => {
    const guest = home.hearth.tokens.create('guest-tablet', 'http:guest-tablet').secret;
    home.hearth.policy.setRoles('http:guest-tablet', ['guest']);
    const call = (name: string, args: unknown = { action: 'open' }) =>
      fetch(`${home.server.url}/api/tools/${name}/call`, {
        method: 'POST',
        headers: { authorization: `Bearer ${guest}`, 'content-type': 'application/json' },
        body: JSON.stringify({ args }),
      });
    const unknown = await call('garage_door_open_now');
    assert.equal(unknown.status, 404);
    assert.equal(lastRow('http:guest-tablet')?.tool, 'garage_door_open_now');
    const notOffered = await call('garage_door');
    assert.equal(notOffered.status, 403);
    const row = lastRow('http:guest-tablet')!;
    assert.deepEqual([row.tool, row.outcome, row.action], ['garage_door', 'failed', 'open']);
    const notObject = await call('garage_door', ['open']);
    assert.equal(notObject.status, 400);
    const bad = lastRow('http:guest-tablet')!;
    assert.ok(bad.id > row.id, 'arguments that are no object leave a row too');
    assert.deepEqual([bad.tool, bad.outcome], ['garage_door', 'failed']);
    assert.deepEqual(home.commands(), []);
  });
});
