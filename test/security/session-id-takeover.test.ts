// Low item of issue 15: a session id that exists or existed for another
// principal cannot be taken, ephemeral or not (an ephemeral session opened
// with the owner's id used to lock the owner out of it). Real HTTP server,
// real SQLite file, the offline intent model.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { useHttpHome, OWNER_AND_GUEST } from '../helpers/http-home.js';

describe('security: session ids belong to their principal', () => {
  const home = useHttpHome({ tokens: { owner: OWNER_AND_GUEST.owner, guest: { name: 'guest-tablet', principal: 'http:guest' } } });
  const api = (method: string, path: string, token: string, body?: unknown) => home.api(method, path, { token, body, strictJson: true });

  it("refuses an ephemeral session with the id of another principal's saved session; the owner keeps it", async () => {
    assert.equal((await api('POST', '/api/sessions', home.secret('owner'), { id: 'family-chat' })).status, 201);
    const said = await api('POST', '/api/sessions/family-chat/prompt?stream=false', home.secret('owner'), { text: 'is the kitchen light on?' });
    assert.equal(said.status, 200, said.text);
    assert.equal((await api('DELETE', '/api/sessions/family-chat', home.secret('owner'))).status, 200);

    const taken = await api('POST', '/api/sessions', home.secret('guest'), { id: 'family-chat', ephemeral: true });
    assert.equal(taken.status, 403, taken.text);
    assert.match(taken.json.error.message, /belongs to another principal/);
    const reopened = await api('POST', '/api/sessions', home.secret('owner'), { id: 'family-chat' });
    assert.equal(reopened.status, 201, reopened.text);
  });

  it("refuses any session with the id of another principal's ephemeral session, open or closed", async () => {
    assert.equal((await api('POST', '/api/sessions', home.secret('guest'), { id: 'guest-scratch', ephemeral: true })).status, 201);
    assert.equal((await api('POST', '/api/sessions', home.secret('owner'), { id: 'guest-scratch', ephemeral: true })).status, 403);
    assert.equal((await api('DELETE', '/api/sessions/guest-scratch', home.secret('guest'))).status, 200);
    assert.equal((await api('POST', '/api/sessions', home.secret('owner'), { id: 'guest-scratch' })).status, 403);
    assert.equal((await api('POST', '/api/sessions', home.secret('guest'), { id: 'guest-scratch', ephemeral: true })).status, 201);
  });
});
