// Session ids belong to their principal. Issue 15: an ephemeral session opened with the owner's id locked the owner
// out of it. Issue 40: /api/sessions ids were global, so a guest that created a session named "kitchen" first made
// the owner's "kitchen" a 403. Each principal now names its HTTP sessions in a namespace of its own (as /v1
// conversations are keyed): the same name is another principal's other session, which neither blocks nor reaches
// the first. Real HTTP server, real SQLite file, the offline intent model.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { scopedSessionId } from '../../src/agent/sessions.js';
import { OWNER_AND_GUEST, useHttpHome } from '../helpers/http-home.js';

describe('security: session ids belong to their principal', () => {
  const home = useHttpHome({ tokens: { owner: OWNER_AND_GUEST.owner, guest: { name: 'guest-tablet', principal: 'http:guest' } } });
  const api = (method: string, path: string, token: string, body?: unknown) => home.api(method, path, { token, body, strictJson: true });
  const engineSession = async (principal: string, name: string) => (await home.hearth.agent()).get(scopedSessionId('http', principal, name));

  it("a guest's session named first does not block the owner's session of the same name, nor see it", async () => {
    // The attack as filed: the guest takes the name first.
    const guests = await api('POST', '/api/sessions', home.secret('guest'), { id: 'kitchen' });
    assert.equal(guests.status, 201, guests.text);
    const owners = await api('POST', '/api/sessions', home.secret('owner'), { id: 'kitchen' });
    assert.equal(owners.status, 201, owners.text);
    assert.equal(owners.json.id, 'kitchen', 'the owner knows it by its own name');
    assert.equal((await engineSession('http:owner', 'kitchen'))?.principal.id, 'http:owner');
    assert.equal((await engineSession('http:guest', 'kitchen'))?.principal.id, 'http:guest');
    assert.notEqual(await engineSession('http:owner', 'kitchen'), await engineSession('http:guest', 'kitchen'));

    // Each prompts its own; the turns do not mix.
    const said = await api('POST', '/api/sessions/kitchen/prompt?stream=false', home.secret('owner'), { text: 'is the kitchen light on?' });
    assert.equal(said.status, 200, said.text);
    const owner = await api('GET', '/api/sessions/kitchen', home.secret('owner'));
    const guest = await api('GET', '/api/sessions/kitchen', home.secret('guest'));
    assert.equal(owner.status, 200);
    assert.equal(guest.status, 200);
    assert.equal((await engineSession('http:guest', 'kitchen'))?.turns, 0, "the owner's turn is not in the guest's session");
    assert.equal((await engineSession('http:owner', 'kitchen'))?.turns, 1);
    // Each lists only its own.
    const listed = await api('GET', '/api/sessions', home.secret('guest'));
    assert.deepEqual(
      listed.json.map((s: { id: string }) => s.id),
      ['kitchen'],
    );
  });

  it("an ephemeral session of the guest's under the owner's saved name leaves the owner's saved session to the owner", async () => {
    assert.equal((await api('POST', '/api/sessions', home.secret('owner'), { id: 'family-chat' })).status, 201);
    const said = await api('POST', '/api/sessions/family-chat/prompt?stream=false', home.secret('owner'), { text: 'is the kitchen light on?' });
    assert.equal(said.status, 200, said.text);
    assert.equal((await api('DELETE', '/api/sessions/family-chat', home.secret('owner'))).status, 200);

    assert.equal((await api('POST', '/api/sessions', home.secret('guest'), { id: 'family-chat', ephemeral: true })).status, 201);
    const reopened = await api('POST', '/api/sessions', home.secret('owner'), { id: 'family-chat' });
    assert.equal(reopened.status, 201, reopened.text);
    assert.equal((await engineSession('http:owner', 'family-chat'))?.turns, 1, 'the saved thread came back to the owner');
  });

  it("another principal's session is not found by its name, nor by its engine id", async () => {
    assert.equal((await api('POST', '/api/sessions', home.secret('guest'), { id: 'guest-scratch', ephemeral: true })).status, 201);
    for (const id of ['guest-scratch', scopedSessionId('http', 'http:guest', 'guest-scratch')]) {
      const r = await api('POST', `/api/sessions/${id}/prompt?stream=false`, home.secret('owner'), { text: 'turn on the living room lamp' });
      assert.equal(r.status, 404, r.text);
    }
    // Another door cannot open an id in the HTTP namespace either.
    const agent = await home.hearth.agent();
    await assert.rejects(
      agent.open({ principal: { id: 'flow:owner', roles: [] }, id: scopedSessionId('http', 'http:owner', 'kitchen') }),
      /kept for the sessions of the HTTP API/,
    );
  });
});
