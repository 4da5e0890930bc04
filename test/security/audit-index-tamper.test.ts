// The readers' call index (migration 0014) is derived from the hash-chained log and was not covered by
// `hearth audit verify`: whoever can write the database could change a call's principal in it, or delete the call
// from it, and `hearth audit --principal ...` (every list filtered by principal, entity or time) no longer showed
// that call, while verify said the chain was fine. Now verify compares the index with the log and names the first
// row where they differ (exit 1), and the next start says so in its log and rebuilds the index from the log.
// Real SQLite files, the real CLI, and the assembly (Hearth.open, as `hearth start` runs it) on a real broker.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { SqliteAuditLog } from '../../src/audit/store.js';
import { openDatabase } from '../../src/db/database.js';
import { auditEntry } from '../audit/support.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { runHearth } from '../helpers/cli.js';
import { openHearth } from '../helpers/home.js';
import { logSink } from '../helpers/log-sink.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-index-tamper-'));
const dbPath = join(dir, 'hearth.db');
let broker: TestBroker;
const ids: Record<string, number> = {};

/** The calls a principal made, as `hearth audit --principal` lists them (through the index), read by a store of their own. */
function listedFor(principal: string): number[] {
  const db = openDatabase(dbPath);
  try {
    return new SqliteAuditLog(db).list({ principal }).map((r) => r.id);
  } finally {
    db.close();
  }
}

describe('an edited call index is found by verify and rebuilt at the next start', () => {
  before(async () => {
    broker = await startAedes();
    const db = openDatabase(dbPath);
    const audit = new SqliteAuditLog(db);
    for (const [name, principal] of [
      ['alice', 'chat:alice'],
      ['bob', 'mcp:bob'],
      ['unlock', 'mcp:bob'],
      ['carol', 'chat:carol'],
    ] as const) {
      const id = await audit.beginDurable(
        auditEntry({ principal, ...(name === 'unlock' ? { tool: 'front_door_lock', entityId: 'front_door.lock', action: 'unlock' } : {}) }),
      );
      audit.finishLater(id, { outcome: 'confirmed', latencyMs: 3, echo: null });
      ids[name] = id;
    }
    await audit.close();
    db.close();
  });
  after(async () => {
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a clean log and index verify', async () => {
    assert.deepEqual(listedFor('mcp:bob'), [ids.bob!, ids.unlock!]);
    const ok = await runHearth(['audit', 'verify', '--db', dbPath], { cwd: dir });
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
  });

  it("the unlock moved to someone else's name in the index, and bob's other call deleted from it: verify names the first row (exit 1)", async () => {
    const raw = new Database(dbPath);
    raw.prepare("UPDATE audit_call_index SET principal = 'chat:alice' WHERE id = ?").run(ids.unlock!);
    raw.prepare('DELETE FROM audit_call_index WHERE id = ?').run(ids.bob!);
    raw.close();
    // What the edit was for: bob's calls are gone from the list by principal, the unlock shows under alice.
    assert.deepEqual(listedFor('mcp:bob'), []);
    assert.deepEqual(listedFor('chat:alice'), [ids.alice!, ids.unlock!]);
    const v = await runHearth(['audit', 'verify', '--db', dbPath], { cwd: dir });
    assert.equal(v.code, 1, v.stdout + v.stderr);
    const out = v.stdout + v.stderr;
    assert.match(out, new RegExp(`row ${ids.bob}: the readers' call index does not match the log \\(call ${ids.bob} is missing from it\\)`));
    assert.match(out, /rebuilds the index from it at its next start/);
  });

  it('the next start says so in its log, rebuilds the index from the log, and the lists are right again', async () => {
    const logs = logSink('info');
    const hearth = await openHearth(broker.url, dir, logs.log);
    try {
      const recovered = hearth.recoverAudit();
      assert.equal(recovered.chainOk, true, recovered.problem);
      const said = logs.find(/call index did not match the log/);
      assert.equal(said.length, 1, JSON.stringify(logs.lines.slice(-5)));
      assert.equal((said[0]!.firstBroken as { id: number }).id, ids.bob);
    } finally {
      await hearth.close();
    }
    assert.deepEqual(listedFor('mcp:bob'), [ids.bob!, ids.unlock!]);
    assert.deepEqual(listedFor('chat:alice'), [ids.alice!]);
    const v = await runHearth(['audit', 'verify', '--db', dbPath], { cwd: dir });
    assert.equal(v.code, 0, v.stdout + v.stderr);
  });
});
