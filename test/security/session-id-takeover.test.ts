// Low item of issue 15: a session id that exists or existed for another
// principal cannot be taken, ephemeral or not (an ephemeral session opened
// with the owner's id used to lock the owner out of it). Real HTTP server,
// real SQLite file, the offline intent model.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startHttpServer, type HttpServer } from '../../src/http/server.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { startHome, type TestHome } from '../helpers/home.js';

describe('security: session ids belong to their principal', () => {
  let broker: TestBroker;
  let home: TestHome;
  let server: HttpServer;
  let owner: string;
  let guest: string;

  async function api(method: string, path: string, token: string, body?: unknown) {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : undefined, text };
  }

  before(async () => {
    broker = await startAedes();
    home = await startHome(broker);
    server = await startHttpServer({ hearth: home.hearth, host: '127.0.0.1', port: 0, log: home.logs.log.child({ part: 'http' }) });
    owner = home.hearth.tokens.create('owner-phone', 'http:owner').secret;
    home.hearth.policy.setRoles('http:owner', ['owner']);
    guest = home.hearth.tokens.create('guest-tablet', 'http:guest').secret;
  });
  after(async () => {
    await server?.close();
    await home?.close();
    await broker?.stop();
  });

  it("refuses an ephemeral session with the id of another principal's saved session; the owner keeps it", async () => {
    assert.equal((await api('POST', '/api/sessions', owner, { id: 'family-chat' })).status, 201);
    const said = await api('POST', '/api/sessions/family-chat/prompt?stream=false', owner, { text: 'is the kitchen light on?' });
    assert.equal(said.status, 200, said.text);
    assert.equal((await api('DELETE', '/api/sessions/family-chat', owner)).status, 200);

    const taken = await api('POST', '/api/sessions', guest, { id: 'family-chat', ephemeral: true });
    assert.equal(taken.status, 403, taken.text);
    assert.match(taken.json.error.message, /belongs to another principal/);
    const reopened = await api('POST', '/api/sessions', owner, { id: 'family-chat' });
    assert.equal(reopened.status, 201, reopened.text);
  });

  it("refuses any session with the id of another principal's ephemeral session, open or closed", async () => {
    assert.equal((await api('POST', '/api/sessions', guest, { id: 'guest-scratch', ephemeral: true })).status, 201);
    assert.equal((await api('POST', '/api/sessions', owner, { id: 'guest-scratch', ephemeral: true })).status, 403);
    assert.equal((await api('DELETE', '/api/sessions/guest-scratch', guest)).status, 200);
    assert.equal((await api('POST', '/api/sessions', owner, { id: 'guest-scratch' })).status, 403);
    assert.equal((await api('POST', '/api/sessions', guest, { id: 'guest-scratch', ephemeral: true })).status, 201);
  });
});
