// Issue 27: no cap on saved sessions: one guest saved 2,000 sessions with 50 KB prompts (a 128 MB database).
// Each principal keeps at most SAVED_SESSION_LIMITS.perPrincipal saved sessions (the least recently used go,
// messages with them), others' sessions are untouched, and sessions unused for keepDays are forgotten at
// start. (MCP sessions are capped per principal in src/mcp/http.ts.) A real SQLite file.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { HistoryStore, SAVED_SESSION_LIMITS } from '../../src/agent/history.js';
import { openDatabase } from '../../src/db/database.js';

describe('security: saved sessions are capped and expire per principal', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-saved-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it(`a guest saving ${SAVED_SESSION_LIMITS.perPrincipal + 30} sessions keeps the newest ${SAVED_SESSION_LIMITS.perPrincipal}; the owner's stay; old ones expire`, () => {
    const db = openDatabase(join(dir, 'hearth.db'));
    try {
      const store = new HistoryStore(db);
      store.create({ id: 'owner-1', principal: 'http:owner', model: 'm', systemPrompt: null });
      const prompt = 'p'.repeat(50_000);
      const total = SAVED_SESSION_LIMITS.perPrincipal + 30;
      for (let i = 0; i < total; i++) {
        store.create({ id: `guest-${i}`, principal: 'http:guest', model: 'm', systemPrompt: prompt, messages: [{ role: 'user', content: `hi ${i}` }] });
        db.prepare('UPDATE sessions SET updated_at = ? WHERE id = ?').run(new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(), `guest-${i}`);
      }
      const count = (principal: string) => (db.prepare('SELECT count(*) AS n FROM sessions WHERE principal = ?').get(principal) as { n: number }).n;
      assert.equal(count('http:guest'), SAVED_SESSION_LIMITS.perPrincipal);
      assert.equal(store.get('guest-0'), undefined, 'the least recently used went');
      assert.ok(store.get(`guest-${total - 1}`));
      const orphans = db.prepare('SELECT count(*) AS n FROM session_messages WHERE session_id NOT IN (SELECT id FROM sessions)').get() as { n: number };
      assert.equal(orphans.n, 0, 'their messages went with them');
      assert.equal(count('http:owner'), 1);
      // At start, sessions nobody used for keepDays are forgotten.
      const later = Date.UTC(2026, 0, 1) + (SAVED_SESSION_LIMITS.keepDays + 1) * 86_400_000;
      db.prepare("UPDATE sessions SET updated_at = ? WHERE id = 'owner-1'").run(new Date(later).toISOString());
      assert.equal(store.expireOld(later), SAVED_SESSION_LIMITS.perPrincipal);
      assert.equal(count('http:guest'), 0);
      assert.equal(count('http:owner'), 1);
    } finally {
      db.close();
    }
  });
});
