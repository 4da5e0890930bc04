// Finding 4 of issue 15, the binding part: an approval binds to the entity
// and the exact arguments of the call, not to the tool name (a tool name can
// move to another entity); rate-limit hits name the entity too. Real SQLite
// file.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openDatabase, type Db } from '../../src/db/database.js';
import { SqliteApprovals } from '../../src/policy/approvals.js';

describe('security: approvals bind to the entity and the exact arguments', () => {
  let dir: string;
  let db: Db;
  let approvals: SqliteApprovals;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'hearth-binding-'));
    db = openDatabase(join(dir, 'hearth.db'));
    approvals = new SqliteApprovals(db);
  });
  after(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a grant for the front door is not usable when the same tool name now stands for another lock', () => {
    const call = { principal: 'chat:alice', tool: 'front_door_lock', entityId: 'front_door.lock', args: { action: 'unlock' }, reason: 'built-in' };
    const held = approvals.request(call);
    assert.equal(approvals.get(held.id)?.entityId, 'front_door.lock');
    assert.ok(approvals.grant(held.id, 'cli:owner'));
    // The name moved: `front_door_lock` is now a newcomer's tool.
    assert.equal(approvals.consume({ principal: 'chat:alice', tool: 'front_door_lock', entityId: 'intruder.lock', args: { action: 'unlock' } }), null);
    // Other arguments: not this approval either.
    assert.equal(
      approvals.consume({ principal: 'chat:alice', tool: 'front_door_lock', entityId: 'front_door.lock', args: { action: 'unlock', code: '1234' } }),
      null,
    );
    // The real lock, under whatever name it has now, with the same arguments: used once.
    assert.equal(
      approvals.consume({ principal: 'chat:alice', tool: 'front_door_lock_2f9a', entityId: 'front_door.lock', args: { action: 'unlock' } }),
      held.id,
    );
    assert.equal(approvals.consume({ principal: 'chat:alice', tool: 'front_door_lock_2f9a', entityId: 'front_door.lock', args: { action: 'unlock' } }), null);
  });

  it('a pending request for one entity is not reused for another entity with the same tool name', () => {
    const a = approvals.request({ principal: 'chat:bob', tool: 'garage_door', entityId: 'garage_door.door', args: { action: 'open' }, reason: 'r' });
    const b = approvals.request({ principal: 'chat:bob', tool: 'garage_door', entityId: 'barn_door.door', args: { action: 'open' }, reason: 'r' });
    assert.notEqual(a.id, b.id);
  });
});
