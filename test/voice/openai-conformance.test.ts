// The OpenAI-compatible endpoint as the `openai` npm client expects it, with
// an LLM behind Hearth (a fake OpenAI server on the wire, so the test decides
// what the model says and when): a second message while a conversation's turn
// runs (the client's own retries counted on the wire), max_tokens and stop,
// system_fingerprint, a real `created`, and the Responses API's answer. Real
// HTTP server, demo home on aedes, SQLite.
import assert from 'node:assert/strict';
import { createServer, request as forward } from 'node:http';
import type { AddressInfo } from 'node:net';
import { before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { hearthVersion } from '../../src/util/version.js';
import { textChunks, toolCallChunks, type ScriptedResponse } from '../helpers/openai-server.js';
import { waitFor } from '../helpers/wait.js';
import { useHttpHome } from '../helpers/http-home.js';
import { chatClient } from '../helpers/openai-client.js';
import { useModel, agentOnModel } from '../helpers/use-model.js';

describe('OpenAI-compatible endpoint as the openai client expects it (LLM on the wire)', () => {
  const model = useModel();
  const home = useHttpHome({ settings: () => agentOnModel(model.url), tokens: { tablet: { name: 'tablet', principal: 'http:tablet', roles: ['owner'] } } });
  let client: OpenAI;
  const lamp = () => home.hearth.bridge.cache.get('living_room_lamp.lamp')?.value;
  const clientFor = (headers: Record<string, string> = {}) => chatClient(home.server.url, home.secret('tablet'), headers);

  before(() => {
    client = clientFor();
  });

  /** A plain HTTP relay to the Hearth server that counts the requests it carries: what the client really sent. */
  async function countingRelay(target: string) {
    const paths: string[] = [];
    const relay = createServer((req, res) => {
      paths.push(`${req.method} ${req.url}`);
      const out = forward(`${target}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      out.on('error', () => res.destroy());
      req.pipe(out);
    });
    await new Promise<void>((ok) => relay.listen(0, '127.0.0.1', ok));
    return {
      url: `http://127.0.0.1:${(relay.address() as AddressInfo).port}`,
      paths,
      close: () => new Promise<void>((ok) => relay.close(() => ok())),
    };
  }

  it("a second message while the conversation's turn runs is 409, which the openai client (retries on) sends once; the first caller gets its real outcome", async () => {
    const want = lamp() === 'on' ? 'off' : 'on';
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const first = model.requests.length;
    model.setScript(async (_body, index): Promise<ScriptedResponse> => {
      if (index === first) {
        await gate;
        return toolCallChunks([{ name: 'host__living_room_lamp', arguments: { action: `turn_${want}` } }]);
      }
      return textChunks(`The living room lamp is ${want}.`);
    });
    const keyed = clientFor({ 'x-hearth-conversation': 'busy-chat' });
    const asking = keyed.chat.completions.create({ model: 'hearth', messages: [{ role: 'user', content: `turn ${want} the living room lamp` }] });
    await model.waitForRequests(first + 1);

    // The client as apps make it: its default retries on (it retries a 409 unless told not to).
    const relay = await countingRelay(home.server.url);
    try {
      const retrying = new OpenAI({ apiKey: home.secret('tablet'), baseURL: `${relay.url}/v1`, defaultHeaders: { 'x-hearth-conversation': 'busy-chat' } });
      assert.equal(retrying.maxRetries, 2);
      await assert.rejects(
        retrying.chat.completions.create({ model: 'hearth', messages: [{ role: 'user', content: 'and the kitchen light' }] }),
        (err: any) => {
          assert.ok(err instanceof OpenAI.ConflictError, String(err));
          assert.equal(err.code, 'conversation_busy');
          assert.equal(err.headers.get('x-should-retry'), 'false');
          return true;
        },
      );
      assert.deepEqual(relay.paths, ['POST /v1/chat/completions'], 'sent once, not retried');
    } finally {
      await relay.close();
    }

    release();
    const answer = await asking;
    assert.equal(answer.choices[0].message.content, `The living room lamp is ${want}.`);
    assert.equal(answer.choices[0].finish_reason, 'stop');
    const ext = (answer.choices[0].message as unknown as { hearth: any }).hearth;
    assert.equal(ext.stop_reason, 'completed');
    await waitFor(`the lamp is ${want}`, () => lamp() === want);
    assert.equal(home.hearth.audit.get(ext.audit_ids[0])?.outcome, 'confirmed');
  });

  it('a turn that failed after it switched something is a 502 the openai client (retries on) does not send again: one switch, one audit row', async () => {
    const want = lamp() === 'on' ? 'off' : 'on';
    // The model asks for the lamp, then fails on the next round (a 400 its provider does not retry).
    model.setScript([
      toolCallChunks([{ name: 'host__living_room_lamp', arguments: { action: `turn_${want}` } }]),
      { status: 400, body: { error: { message: 'context length exceeded', type: 'invalid_request_error' } } },
    ]);
    const rows = () => home.hearth.audit.list({ entityId: 'living_room_lamp.lamp', limit: 10_000 }).length;
    const before = rows();
    const relay = await countingRelay(home.server.url);
    try {
      const retrying = new OpenAI({ apiKey: home.secret('tablet'), baseURL: `${relay.url}/v1` });
      await assert.rejects(
        retrying.chat.completions.create({ model: 'hearth', messages: [{ role: 'user', content: `turn ${want} the living room lamp` }] }),
        (err: any) => {
          assert.equal(err.status, 502, String(err));
          assert.equal(err.code, 'turn_failed');
          assert.equal(err.headers.get('x-should-retry'), 'false');
          return true;
        },
      );
      assert.deepEqual(relay.paths, ['POST /v1/chat/completions'], 'sent once, not retried');
    } finally {
      await relay.close();
    }
    await waitFor(`the lamp is ${want}`, () => lamp() === want);
    assert.equal(rows(), before + 1, 'the lamp was commanded once');
  });

  it("a model's own words about a held call give way to one sentence for a person; the details stay in `hearth`", async () => {
    model.setScript([
      toolCallChunks([{ name: 'host__front_door_lock', arguments: { action: 'unlock' } }]),
      textChunks(
        'I could not unlock it yet. It needs approval: an owner must run `hearth approve` with the id from the tool, then ask me to make the same call again.',
      ),
    ]);
    const answer = await client.chat.completions.create({ model: 'hearth', messages: [{ role: 'user', content: 'unlock the front door' }] });
    assert.equal(answer.choices[0].message.content, "I could not unlock it yet. Unlocking the front door lock needs an owner's approval; I've asked.");
    const ext = (answer.choices[0].message as unknown as { hearth: any }).hearth;
    assert.equal(ext.approval_ids.length, 1);
    assert.match(ext.tool_calls[0].result, new RegExp(`hearth approve ${ext.approval_ids[0]}`));
    assert.equal(home.hearth.bridge.cache.get('front_door.lock')?.value, 'locked');
  });

  it('max_tokens cuts the words (finish_reason "length"), never what the turn does', async () => {
    const want = lamp() === 'on' ? 'off' : 'on';
    model.setScript([
      toolCallChunks([{ name: 'host__living_room_lamp', arguments: { action: `turn_${want}` } }]),
      textChunks(`Done: the living room lamp is now ${want}, as you asked.`),
    ]);
    const cut = await client.chat.completions.create({ model: 'hearth', max_tokens: 3, messages: [{ role: 'user', content: `turn ${want} the lamp` }] });
    assert.equal(cut.choices[0].message.content, 'Done: the li', '3 tokens: 12 characters');
    assert.equal(cut.choices[0].finish_reason, 'length');
    assert.ok(cut.usage!.completion_tokens <= 3);
    await waitFor(`the lamp is ${want}`, () => lamp() === want);

    model.setScript([textChunks('The living room lamp is on and the kitchen light is off.', { pieceSize: 2 })]);
    const stream = await client.chat.completions.create({
      model: 'hearth',
      stream: true,
      max_completion_tokens: 4,
      messages: [{ role: 'user', content: 'what is on?' }],
    });
    let text = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(text, 'The living room ');
    assert.equal(finish, 'length');
  });

  it('stop ends the answer before the first stop sequence, even one split across streamed pieces', async () => {
    model.setScript([textChunks('The lamp is on. Anything else?')]);
    const one = await client.chat.completions.create({ model: 'hearth', stop: '.', messages: [{ role: 'user', content: 'is the lamp on?' }] });
    assert.equal(one.choices[0].message.content, 'The lamp is on');
    assert.equal(one.choices[0].finish_reason, 'stop');

    model.setScript([textChunks('The lamp is on. Anything else?', { pieceSize: 3 })]);
    const stream = await client.chat.completions.create({
      model: 'hearth',
      stream: true,
      stop: ['Anything', 'is on'],
      messages: [{ role: 'user', content: 'is the lamp on?' }],
    });
    let text = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(text, 'The lamp ');
    assert.equal(finish, 'stop');
  });

  it("every answer carries system_fingerprint; the model's created is when this Hearth started", async () => {
    model.setScript([textChunks('Hello.'), textChunks('Hello.')]);
    const completion = await client.chat.completions.create({ model: 'hearth', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(completion.system_fingerprint, `hearth-${hearthVersion()}`);
    const stream = await client.chat.completions.create({ model: 'hearth', stream: true, messages: [{ role: 'user', content: 'hello' }] });
    for await (const chunk of stream) assert.equal(chunk.system_fingerprint, `hearth-${hearthVersion()}`);
    const [hearth] = (await client.models.list()).data;
    const now = Math.floor(Date.now() / 1000);
    assert.ok(hearth.created > now - 3600 && hearth.created <= now, `created ${hearth.created}`);
  });

  it("/v1/responses is not served: an error in the API's shape that names /v1/chat/completions", async () => {
    await assert.rejects(client.responses.create({ model: 'hearth', input: 'turn on the lamp' }), (err: any) => {
      assert.ok(err instanceof OpenAI.NotFoundError, String(err));
      assert.equal(err.type, 'invalid_request_error');
      assert.equal(err.code, 'unsupported_endpoint');
      assert.match(err.message, /POST \/v1\/chat\/completions/);
      return true;
    });
  });
});
