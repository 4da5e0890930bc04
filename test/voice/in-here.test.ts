// "In here" through a chat app: the token's area reaches the offline model, which resolves "the lights in
// here" to that area's lights; a token with no area is asked which area, and nothing is done.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { startHttpServer, type HttpServer } from '../../src/http/server.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { startHome, type TestHome } from '../helpers/home.js';
import { waitFor } from '../helpers/wait.js';

describe('the speaker area with the offline model over /v1/chat/completions', () => {
  let broker: TestBroker;
  let home: TestHome;
  let server: HttpServer;
  let kitchen: OpenAI;
  let nowhere: OpenAI;
  const client = (apiKey: string) => new OpenAI({ apiKey, baseURL: `${server.url}/v1`, maxRetries: 0, timeout: 20_000 });
  const ask = async (c: OpenAI, text: string) =>
    (await c.chat.completions.create({ model: 'hearth', messages: [{ role: 'user', content: text }] })).choices[0]!.message.content ?? '';
  const state = (id: string) => home.hearth.bridge.cache.get(id)?.value;

  before(async () => {
    broker = await startAedes();
    home = await startHome(broker);
    server = await startHttpServer({ hearth: home.hearth, host: '127.0.0.1', port: 0, log: home.logs.log.child({ part: 'http' }) });
    kitchen = client(home.hearth.tokens.create('kitchen-tablet', 'http:kitchen-tablet', 'Kitchen').secret);
    nowhere = client(home.hearth.tokens.create('phone', 'http:phone').secret);
    home.hearth.policy.setRoles('http:kitchen-tablet', ['owner']);
    home.hearth.policy.setRoles('http:phone', ['owner']);
  });
  after(async () => {
    await server?.close();
    await home?.close();
    await broker?.stop();
  });

  it('"turn on the lights in here" from the kitchen tablet switches the kitchen light, and only it', async () => {
    const lightId = home.hearth.bridge.registry.entities().find((e) => e.kind === 'light' && e.area === 'Kitchen')!.id;
    await home.hearth.tools.call('kitchen_light', { action: 'turn_off' }, { id: 'cli:test', roles: ['owner'] });
    await waitFor('the kitchen light off', () => state(lightId) === 'off', 15_000);
    const lamp = state('living_room_lamp.lamp');
    const answer = await ask(kitchen, 'turn on the lights in here');
    assert.match(answer, /kitchen/i);
    await waitFor('the kitchen light on', () => state(lightId) === 'on', 15_000);
    assert.equal(state('living_room_lamp.lamp'), lamp, 'another area was left alone');
    const rows = home.hearth.audit.list({ limit: 5 });
    assert.ok(rows.some((r) => r.principal === 'http:kitchen-tablet' && r.entityId === lightId && /from area "Kitchen"/.test(r.reason)));
  });

  it('a token with no area is asked which area, and nothing is done', async () => {
    const before = home.hearth.audit.list({ limit: 1 })[0]?.id ?? 0;
    const answer = await ask(nowhere, 'turn off the lights in here');
    assert.match(answer, /which (area|room)/i);
    assert.equal(home.hearth.audit.list({ limit: 1 })[0]?.id ?? 0, before, 'no call was made');
  });
});
