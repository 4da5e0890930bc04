// Issue 27 (low): conversation ids were predictable (conv-sha256(principal,
// key)), so a guest opened a session with the owner's conversation id through
// /api/sessions and locked the owner out. Conversation ids are now a namespace
// only the conversation doors (OpenAI-compatible, Wyoming) open, each for its
// own principal. Real HTTP server, real SQLite file, the offline model.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { conversationSessionId } from '../../src/agent/conversations.js';
import { useHttpHome, OWNER_AND_GUEST } from '../helpers/http-home.js';

describe("security: no principal can claim or block another principal's conversation", () => {
  const home = useHttpHome({ tokens: { owner: OWNER_AND_GUEST.owner, guest: { name: 'guest-tablet', principal: 'http:guest' } } });
  const call = (method: string, path: string, token: string, body?: unknown, headers: Record<string, string> = {}) =>
    home.api(method, path, { token, body, headers, strictJson: true });
  /** A chat message in the conversation keyed "family-chat", with `token`. */
  const familyChat = (token: string) =>
    call(
      'POST',
      '/v1/chat/completions',
      token,
      { model: 'hearth', messages: [{ role: 'user', content: 'is the kitchen light on?' }] },
      { 'x-hearth-conversation': 'family-chat' },
    );

  it("a guest cannot open a session with the id of the owner's chat or of a satellite's voice conversation", async () => {
    for (const [principal, key] of [
      ['http:owner', 'family-chat'],
      ['voice:kitchen', '01HS6SP2XD1E5HEHVDZE8R2WMR'],
    ]) {
      const id = conversationSessionId(principal, key);
      for (const ephemeral of [false, true]) {
        // Over HTTP the id is the guest's own name for a session of its own (issue 40): never the conversation.
        const taken = await call('POST', '/api/sessions', home.secret('guest'), { id, ephemeral });
        assert.equal(taken.status, 201, taken.text);
        const agent = await home.hearth.agent();
        assert.equal(agent.get(id), undefined, 'the conversation was not opened for the guest');
        assert.equal((await call('DELETE', `/api/sessions/${id}`, home.secret('guest'))).status, 200);
      }
      // Nor through any other door: every one opens sessions here.
      const agent = await home.hearth.agent();
      await assert.rejects(agent.open({ principal: { id: 'flow:guest', roles: [] }, id }), /kept for the conversations/);
    }
    const chat = await familyChat(home.secret('owner'));
    assert.equal(chat.status, 200, chat.text);
    assert.equal(chat.json.hearth.session, conversationSessionId('http:owner', 'family-chat'));
    // The guest's same key is a conversation of its own.
    const theirs = await familyChat(home.secret('guest'));
    assert.equal(theirs.status, 200, theirs.text);
    assert.notEqual(theirs.json.hearth.session, chat.json.hearth.session);
  });
});
