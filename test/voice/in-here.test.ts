// "In here" through a chat app: the token's area reaches the offline model, which resolves "the lights in
// here" to that area's lights; a token with no area is asked which area, and nothing is done.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type OpenAI from 'openai';
import { waitFor } from '../helpers/wait.js';
import { useHttpHome } from '../helpers/http-home.js';
import { chatClient, ask } from '../helpers/openai-client.js';

describe('the speaker area with the offline model over /v1/chat/completions', () => {
  const home = useHttpHome({
    tokens: {
      kitchen: { name: 'kitchen-tablet', principal: 'http:kitchen-tablet', area: 'Kitchen', roles: ['owner'] },
      phone: { name: 'phone', principal: 'http:phone', roles: ['owner'] },
    },
  });
  let kitchen: OpenAI;
  let nowhere: OpenAI;
  const state = (id: string) => home.hearth.bridge.cache.get(id)?.value;

  before(() => {
    kitchen = chatClient(home.server.url, home.secret('kitchen'));
    nowhere = chatClient(home.server.url, home.secret('phone'));
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
