// The OpenAI-compatible endpoint, driven by the `openai` npm client (a client
// no one here wrote) against a real HTTP server on the demo home (aedes,
// simulator, SQLite) with the offline intent model.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { waitFor } from '../helpers/wait.js';
import { useHttpHome } from '../helpers/http-home.js';
import { chatClient } from '../helpers/openai-client.js';

describe('OpenAI-compatible endpoint (openai npm client, demo home, offline model)', () => {
  const home = useHttpHome({
    tokens: {
      owner: { name: 'living-room-tablet', principal: 'http:tablet', area: 'Living room', roles: ['owner'] },
      guest: { name: 'guest-phone', principal: 'http:guest', roles: ['guest'] },
    },
  });
  let client: OpenAI;

  const clientFor = (apiKey: string, headers: Record<string, string> = {}) => chatClient(home.server.url, apiKey, headers);
  const lamp = () => home.hearth.bridge.cache.get('living_room_lamp.lamp')?.value;
  const hearthOf = (message: unknown) => (message as { hearth: any }).hearth;

  before(() => {
    client = clientFor(home.secret('owner'));
  });

  it('lists the one model', async () => {
    const models = await client.models.list();
    assert.deepEqual(
      models.data.map((m) => m.id),
      ['hearth'],
    );
    const one = await client.models.retrieve('hearth');
    assert.equal(one.id, 'hearth');
  });

  it('a turn switches the lamp: the answer in OpenAI form, tool calls and audit ids in `hearth`, the audit row names the principal and its area', async () => {
    const before = lamp();
    const want = before === 'on' ? 'off' : 'on';
    const completion = await client.chat.completions.create({
      model: 'hearth',
      messages: [
        { role: 'system', content: 'You are helpful.' },
        { role: 'user', content: `turn ${want} the living room lamp` },
      ],
    });
    assert.equal(completion.object, 'chat.completion');
    assert.equal(completion.choices.length, 1);
    const message = completion.choices[0].message;
    assert.equal(message.role, 'assistant');
    assert.equal(completion.choices[0].finish_reason, 'stop');
    assert.match(message.content ?? '', /lamp/i);
    const ext = hearthOf(message);
    assert.equal(ext.tool_calls.length, 1, JSON.stringify(ext));
    assert.equal(ext.tool_calls[0].name, 'living_room_lamp');
    assert.equal(ext.tool_calls[0].arguments.action, `turn_${want}`);
    assert.equal(ext.audit_ids.length, 1);
    assert.equal(ext.area, 'Living room');
    assert.equal(ext.session, null, 'no conversation key: an ephemeral session');
    await waitFor(`the lamp is ${want}`, () => lamp() === want);
    const row = home.hearth.audit.get(ext.audit_ids[0]);
    assert.ok(row);
    assert.equal(row.principal, 'http:tablet');
    assert.match(row.reason, /\[from area "Living room"\]/);
    assert.equal(row.tool, 'living_room_lamp');
  });

  it('streams chat.completion.chunks; the last carries `hearth`; the raw stream ends with data: [DONE]', async () => {
    const want = lamp() === 'on' ? 'off' : 'on';
    const stream = await client.chat.completions.create({
      model: 'hearth',
      stream: true,
      messages: [{ role: 'user', content: `turn ${want} the living room lamp` }],
    });
    let text = '';
    const chunks: any[] = [];
    for await (const chunk of stream) {
      chunks.push(chunk);
      assert.equal(chunk.object, 'chat.completion.chunk');
      text += chunk.choices[0]?.delta?.content ?? '';
    }
    assert.ok(chunks.length >= 3, `chunks: ${chunks.length}`);
    assert.equal(chunks[0].choices[0].delta.role, 'assistant');
    const last = chunks[chunks.length - 1];
    assert.equal(last.choices[0].finish_reason, 'stop');
    assert.equal(last.hearth.tool_calls[0].name, 'living_room_lamp');
    assert.equal(last.hearth.audit_ids.length, 1);
    assert.match(text, /lamp/i);
    await waitFor(`the lamp is ${want}`, () => lamp() === want);

    // On the wire: SSE data lines only, the bare [DONE] at the end.
    const raw = await fetch(`${home.server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${home.secret('owner')}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'hearth',
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: 'is the living room lamp on?' }],
      }),
    });
    assert.equal(raw.status, 200);
    assert.match(raw.headers.get('content-type') ?? '', /^text\/event-stream/);
    const body = await raw.text();
    assert.match(body, /data: \[DONE\]\n\n$/);
    const datas = body
      .split('\n\n')
      .filter((b) => b.startsWith('data: '))
      .map((b) => b.slice(6));
    const usage = JSON.parse(datas[datas.length - 2]);
    assert.deepEqual(usage.choices, []);
    assert.ok(usage.usage.total_tokens > 0);
  });

  it('a question reads and does not actuate', async () => {
    const commandsBefore = home.commands().length;
    const auditBefore = home.hearth.audit.digest().count;
    const completion = await client.chat.completions.create({ model: 'hearth', messages: [{ role: 'user', content: 'is the living room lamp on?' }] });
    const ext = hearthOf(completion.choices[0].message);
    assert.ok(ext.tool_calls.length >= 1);
    assert.ok(
      ext.tool_calls.every((c: { name: string; arguments: Record<string, unknown> }) => c.name === 'get_state' || !c.arguments?.action),
      JSON.stringify(ext.tool_calls),
    );
    assert.deepEqual(ext.audit_ids, []);
    assert.match(completion.choices[0].message.content ?? '', /lamp/i);
    assert.equal(home.commands().length, commandsBefore, 'no command was published');
    assert.equal(home.hearth.audit.digest().count, auditBefore, 'no audit row: nothing was actuated');
  });

  it('an unlock is held for an approver: the answer is one sentence for a person; the id, rule and CLI line stay in `hearth`; the lock stays locked', async () => {
    const completion = await client.chat.completions.create({ model: 'hearth', messages: [{ role: 'user', content: 'unlock the front door' }] });
    const text = completion.choices[0].message.content ?? '';
    const ext = hearthOf(completion.choices[0].message);
    assert.equal(ext.approval_ids.length, 1, JSON.stringify(ext));
    const id = ext.approval_ids[0];
    assert.equal(text, "Unlocking the front door lock needs an owner's approval; I've asked.");
    assert.ok(!text.includes(id) && !/hearth approve|rule #|same call/.test(text), text);
    // What a program needs stays in the structured result.
    assert.equal(ext.tool_calls[0].approval_id, id);
    assert.match(ext.tool_calls[0].result, /rule #\d+/);
    assert.match(ext.tool_calls[0].result, new RegExp(`hearth approve ${id}`));
    const approval = home.hearth.approvals.get(id);
    assert.equal(approval?.status, 'pending');
    assert.equal(approval?.principal, 'http:tablet');
    assert.equal(home.hearth.bridge.cache.get('front_door.lock')?.value, 'locked');
  });

  it("keys a conversation by X-Hearth-Conversation or `user`: the same key is the same saved session, another principal's same key is not", async () => {
    const keyed = clientFor(home.secret('owner'), { 'x-hearth-conversation': 'kitchen-chat-1' });
    const a = await keyed.chat.completions.create({ model: 'hearth', messages: [{ role: 'user', content: 'is the kitchen light on?' }] });
    const b = await keyed.chat.completions.create({ model: 'hearth', messages: [{ role: 'user', content: 'is the living room lamp on?' }] });
    const sa = hearthOf(a.choices[0].message).session;
    assert.ok(sa);
    assert.equal(hearthOf(b.choices[0].message).session, sa);
    // Saved, and continued: two turns in one thread.
    const saved = (await (await home.hearth.agent()).engine.listSessions({ id: 'http:tablet', roles: [] })).find((s) => s.id === sa);
    assert.equal(saved?.turns, 2);

    const byUser = await client.chat.completions.create({ model: 'hearth', user: 'kitchen-chat-1', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(hearthOf(byUser.choices[0].message).session, sa, 'the user field keys the same conversation');
    const guest = await clientFor(home.secret('guest')).chat.completions.create({
      model: 'hearth',
      user: 'kitchen-chat-1',
      messages: [{ role: 'user', content: 'hello' }],
    });
    const sg = hearthOf(guest.choices[0].message).session;
    assert.ok(sg);
    assert.notEqual(sg, sa);
  });

  it('bad input gets OpenAI-shaped errors naming the parameter', async () => {
    const expectError = async (body: unknown, status: number, param: string | null, message: RegExp) => {
      await assert.rejects(client.chat.completions.create(body as never), (err: any) => {
        assert.ok(err instanceof OpenAI.APIError, String(err));
        assert.equal(err.status, status, `${JSON.stringify(body).slice(0, 80)}: ${err.message}`);
        assert.equal(err.param, param);
        assert.match(err.message, message);
        assert.equal(typeof err.type, 'string');
        return true;
      });
    };
    await expectError({ model: 'hearth' }, 400, 'messages', /messages: is required/);
    await expectError({ messages: [{ role: 'user', content: 'hi' }] }, 400, 'model', /model: is required/);
    await expectError({ model: 'hearth', max_tokens: 0, messages: [{ role: 'user', content: 'hi' }] }, 400, 'max_tokens', /at least 1/);
    await expectError(
      { model: 'hearth', max_completion_tokens: 2.5, messages: [{ role: 'user', content: 'hi' }] },
      400,
      'max_completion_tokens',
      /whole number/,
    );
    await expectError({ model: 'hearth', stop: ['a', 'b', 'c', 'd', 'e'], messages: [{ role: 'user', content: 'hi' }] }, 400, 'stop', /at most 4/);
    await expectError({ model: 'hearth', stop: [''], messages: [{ role: 'user', content: 'hi' }] }, 400, 'stop[0]', /non-empty/);
    await expectError({ model: 'hearth', messages: [] }, 400, 'messages', /must not be empty/);
    await expectError({ model: 'hearth', messages: 'turn on the lamp' }, 400, 'messages', /must be a list/);
    await expectError({ model: 'hearth', messages: [{ role: 'system', content: 'be nice' }] }, 400, 'messages', /no user message/);
    await expectError({ model: 'hearth', messages: [{ role: 'wizard', content: 'hi' }] }, 400, 'messages[0].role', /must be one of/);
    await expectError({ model: 'hearth', messages: [{ role: 'user', content: 42 }] }, 400, 'messages[0].content', /must be a string or a list/);
    await expectError(
      { model: 'hearth', messages: [{ role: 'user', content: [{ type: 'text', text: 7 }] }] },
      400,
      'messages[0].content[0].text',
      /must be a string/,
    );
    await expectError({ model: 'hearth', stream: 'yes', messages: [{ role: 'user', content: 'hi' }] }, 400, 'stream', /true or false/);
    await expectError({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }, 404, 'model', /Hearth serves one model/);
    await expectError({ model: 'hearth', n: 3, messages: [{ role: 'user', content: 'hi' }] }, 400, 'n', /n must be 1/);
    // An option whose value asks for what Hearth cannot give is refused by name, never ignored.
    const hi = [{ role: 'user', content: 'is the living room lamp on?' }];
    await expectError({ model: 'hearth', response_format: { type: 'json_object' }, messages: hi }, 400, 'response_format', /cannot promise JSON/);
    await expectError(
      { model: 'hearth', response_format: { type: 'json_schema', json_schema: { name: 'x', schema: {} } }, messages: hi },
      400,
      'response_format',
      /cannot promise JSON/,
    );
    await expectError({ model: 'hearth', logprobs: true, messages: hi }, 400, 'logprobs', /no token probabilities/);
    await expectError({ model: 'hearth', top_logprobs: 3, messages: hi }, 400, 'top_logprobs', /no token probabilities/);
    await expectError({ model: 'hearth', modalities: ['text', 'audio'], messages: hi }, 400, 'modalities', /text only/);
    await expectError({ model: 'hearth', audio: { voice: 'alloy', format: 'mp3' }, messages: hi }, 400, 'audio', /text only/);
    await expectError({ model: 'hearth', tool_choice: 'required', messages: hi }, 400, 'tool_choice', /"auto" or "none"/);
    await expectError(
      { model: 'hearth', tool_choice: { type: 'function', function: { name: 'weather' } }, messages: hi },
      400,
      'tool_choice',
      /"auto" or "none"/,
    );
    await expectError({ model: 'hearth', function_call: { name: 'weather' }, messages: hi }, 400, 'function_call', /"auto" or "none"/);
    await expectError({ model: 'hearth', web_search_options: {}, messages: hi }, 400, 'web_search_options', /does not search the web/);
    // The values that ask for nothing more than a plain answer go through, as do the ignored options.
    const plain = await client.chat.completions.create({
      model: 'hearth',
      messages: hi as never,
      response_format: { type: 'text' },
      logprobs: false,
      modalities: ['text'],
      tool_choice: 'none',
      temperature: 0.2,
      top_p: 0.9,
      seed: 7,
      tools: [{ type: 'function', function: { name: 'weather', parameters: { type: 'object', properties: {} } } }],
    });
    assert.match(plain.choices[0].message.content ?? '', /lamp/);

    // A huge body: 413 before any of it is read into a turn.
    const huge = await fetch(`${home.server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${home.secret('owner')}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'hearth', messages: [{ role: 'user', content: 'x'.repeat(2 * 1024 * 1024) }] }),
    });
    assert.equal(huge.status, 413);
    const hugeBody = (await huge.json()) as any;
    assert.equal(hugeBody.error.type, 'invalid_request_error');
    assert.equal(hugeBody.error.code, 'body_too_large');
    assert.ok('param' in hugeBody.error);

    const notJson = await fetch(`${home.server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${home.secret('owner')}`, 'content-type': 'application/json' },
      body: '{"messages": [',
    });
    assert.equal(notJson.status, 400);
    assert.match(((await notJson.json()) as any).error.message, /not valid JSON/);
  });

  it('a missing, unknown or revoked token is 401, OpenAI-shaped', async () => {
    await assert.rejects(clientFor('hearth_not-a-real-token').models.list(), (err: any) => {
      assert.ok(err instanceof OpenAI.AuthenticationError, String(err));
      assert.equal(err.type, 'authentication_error');
      return true;
    });
    const none = await fetch(`${home.server.url}/v1/models`);
    assert.equal(none.status, 401);
    const noneBody = (await none.json()) as any;
    assert.equal(noneBody.error.type, 'authentication_error');
    assert.match(noneBody.error.message, /needs a token/);

    const doomed = home.hearth.tokens.create('doomed', 'http:doomed').secret;
    home.hearth.policy.setRoles('http:doomed', ['owner']);
    assert.equal((await clientFor(doomed).models.list()).data[0].id, 'hearth');
    home.hearth.tokens.revoke('doomed');
    await assert.rejects(
      clientFor(doomed).chat.completions.create({ model: 'hearth', messages: [{ role: 'user', content: 'turn on the living room lamp' }] }),
      (err: any) => {
        assert.ok(err instanceof OpenAI.AuthenticationError, String(err));
        assert.match(err.message, /revoked/);
        return true;
      },
    );
  });
});
