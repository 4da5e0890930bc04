// Migrations: from an empty file, from each older version, and refusing a newer database.
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { type DatabaseError, listMigrations, openDatabase } from '../../src/db/database.js';
import { runHearth } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-db-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const latest = listMigrations().length;

describe('migrations', () => {
  it('bring an empty file to the latest version, in WAL mode, with the built-in rules', () => {
    const db = openDatabase(join(dir, 'empty.db'));
    assert.equal(db.pragma('user_version', { simple: true }), latest);
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
    const tables = (db.prepare("select name from sqlite_master where type='table'").all() as Array<{ name: string }>).map((r) => r.name);
    for (const t of ['policy_rules', 'principals', 'approvals', 'audit_entry']) assert.ok(tables.includes(t), t);
    // The audit readers see: one row per call (migration 0009).
    assert.ok(db.prepare("select 1 from sqlite_master where type = 'view' and name = 'audit'").get());
    assert.ok((db.prepare('select count(*) n from policy_rules where builtin = 1').get() as { n: number }).n >= 5);
    db.close();
  });

  for (let from = 1; from < latest; from++) {
    it(`upgrade a version-${from} database and keep its data`, () => {
      const path = join(dir, `v${from}.db`);
      const old = openDatabase(path, { upTo: from });
      assert.equal(old.pragma('user_version', { simple: true }), from);
      old
        .prepare(
          "insert into policy_rules (subject, target_type, target, action, effect, priority, note, created_at, builtin) values ('chat:kept', 'any', '*', 'read', 'allow', 5, 'kept', '2026-01-01T00:00:00Z', 0)",
        )
        .run();
      old.close();
      const db = openDatabase(path);
      assert.equal(db.pragma('user_version', { simple: true }), latest);
      assert.equal((db.prepare("select count(*) n from policy_rules where subject = 'chat:kept'").get() as { n: number }).n, 1);
      db.close();
    });
  }

  it('refuses a database written by a newer Hearth, saying what to do', () => {
    const path = join(dir, 'newer.db');
    openDatabase(path).close();
    const raw = new Database(path);
    raw.pragma(`user_version = ${latest + 3}`);
    raw.close();
    assert.throws(
      () => openDatabase(path),
      (err: DatabaseError) => {
        assert.equal(err.code, 'TOO_NEW');
        assert.match(err.message, new RegExp(`schema version ${latest + 3}, but this Hearth knows only up to ${latest}`));
        assert.match(err.message, /Upgrade Hearth/);
        return true;
      },
    );
  });

  it('stops `hearth start` on a newer database with the same message', async () => {
    const path = join(dir, 'newer-cli.db');
    copyFileSync(join(dir, 'newer.db'), path);
    const { code, stderr } = await runHearth(['start', '--db', path, '--broker-port', '0'], { cwd: dir });
    assert.equal(code, 3);
    assert.match(stderr, /written by a newer Hearth/);
  });
});
