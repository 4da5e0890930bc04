// Issue 15, finding 5: an audit outcome cannot be rewritten undetected. A
// confirmed unlock made `failed` (its hash recomputed), or made `pending`
// again, or the last entry cut off, fails `hearth audit verify`; with the
// audit key and the digest file, any change does, even a rewrite of every hash
// after the edit. Against a Hearth on a real broker with a real SQLite file,
// tampered through a connection of its own, as an attacker on the machine would.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import * as chain from '../../src/audit/chain.js';
import { runHearth } from '../helpers/cli.js';
import { OWNER, type TestHome } from '../helpers/home.js';
import { useHome } from '../helpers/use-home.js';

type Row = Record<string, unknown> & { id: number; prev_hash: string; hash: string };
// The hash functions of whichever schema the file has (this test also ran on the code before the fix).
const hashes = chain as unknown as {
  entryHash?: (prev: string, e: Row) => string;
  doneHash: (hash: string, r: Row) => string;
  computeDigest: (db: Database.Database) => object;
  writeDigestFile: (path: string, d: object) => void;
};

function withRaw<T>(path: string, fn: (raw: Database.Database, appendOnly: boolean) => T): T {
  const raw = new Database(path);
  try {
    const appendOnly = !!raw.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'audit_entry'").get();
    return raw.transaction(() => fn(raw, appendOnly))();
  } finally {
    raw.close();
  }
}

/** What the audit shows for the call is changed to `change`, and the hash that covers it recomputed to match. */
function forgeOutcome(path: string, callId: number, change: { outcome: string; error: string | null }, rechainAfter = false): void {
  withRaw(path, (raw, appendOnly) => {
    if (!appendOnly) {
      // The old layout: the outcome is a column of the call's row, sealed by done_hash alone.
      const r = raw.prepare('SELECT * FROM audit WHERE id = ?').get(callId) as Row;
      const forged = { ...r, ...change };
      raw
        .prepare('UPDATE audit SET outcome = ?, error = ?, done_hash = ? WHERE id = ?')
        .run(change.outcome, change.error, hashes.doneHash(r.hash, forged), callId);
      return;
    }
    const o = raw.prepare("SELECT * FROM audit_entry WHERE call_id = ? AND kind = 'outcome' ORDER BY id DESC LIMIT 1").get(callId) as Row;
    const rows = raw.prepare('SELECT * FROM audit_entry WHERE id >= ? ORDER BY id').all(o.id) as Row[];
    const update = raw.prepare('UPDATE audit_entry SET outcome = ?, error = ?, prev_hash = ?, hash = ? WHERE id = ?');
    let prev = o.prev_hash;
    for (const r of rechainAfter ? rows : rows.slice(0, 1)) {
      const forged: Row = r.id === o.id ? { ...r, ...change, prev_hash: prev } : { ...r, prev_hash: prev };
      const hash = hashes.entryHash!(prev, forged);
      update.run(forged.outcome, forged.error, prev, hash, r.id);
      prev = hash;
    }
  });
}

/** The call shown pending again, as if the command never finished. */
function revertToPending(path: string, callId: number): void {
  withRaw(path, (raw, appendOnly) => {
    if (!appendOnly) {
      raw
        .prepare("UPDATE audit SET outcome = 'pending', error = NULL, latency_ms = NULL, echo = NULL, completed_at = NULL, done_hash = NULL WHERE id = ?")
        .run(callId);
      return;
    }
    // Its outcome is an entry of its own: the only way back to pending is to remove it.
    raw.prepare("DELETE FROM audit_entry WHERE call_id = ? AND kind = 'outcome'").run(callId);
  });
}

function deleteLastRow(path: string): void {
  withRaw(path, (raw, appendOnly) => {
    const table = appendOnly ? 'audit_entry' : 'audit';
    raw.prepare(`DELETE FROM ${table} WHERE id = (SELECT max(id) FROM ${table})`).run();
  });
}

async function unlock(home: TestHome): Promise<number> {
  const held = await home.hearth.tools.call('front_door_lock', { action: 'unlock' }, OWNER);
  assert.match(held.text!, /^needs approval/);
  assert.equal(home.hearth.approvals.grant((held.details as { approvalId: string }).approvalId, 'cli:test-person'), true);
  const res = await home.hearth.tools.call('front_door_lock', { action: 'unlock' }, OWNER);
  assert.match(res.text!, /^confirmed: .*unlocked/);
  return (res.details as { auditId: number }).auditId;
}

async function lamp(home: TestHome, action: 'turn_on' | 'turn_off'): Promise<void> {
  assert.match((await home.hearth.tools.call('living_room_lamp', { action }, OWNER)).text!, /^confirmed/);
}

describe('audit tampering, without a key or digest', () => {
  // A home of its own for each case: each breaks its chain.
  const home = useHome({ travelMs: 50, eachTest: true });
  const path = () => home.hearth.db.name;

  it('a confirmed unlock rewritten to failed, its hash recomputed: verify fails', async () => {
    const id = await unlock(home);
    await lamp(home, 'turn_on'); // the log goes on after the unlock
    assert.equal(home.hearth.audit.verify().ok, true);
    forgeOutcome(path(), id, { outcome: 'failed', error: 'jammed' });
    assert.equal(home.hearth.audit.get(id)!.outcome, 'failed', 'the forgery shows');
    const v = home.hearth.audit.verify();
    assert.equal(v.ok, false, 'the rewritten outcome is detected');
    const cli = await runHearth(['audit', 'verify', '--db', path()], { cwd: home.dir });
    assert.equal(cli.code, 1, cli.stdout);
    assert.match(cli.stderr, /audit chain BROKEN/);
  });

  it('a confirmed unlock reverted to pending: verify fails', async () => {
    const id = await unlock(home);
    await lamp(home, 'turn_off');
    await home.hearth.audit.durable(); // what Hearth has written (outcomes wait for a pause in the calls)
    revertToPending(path(), id);
    assert.equal(home.hearth.audit.get(id)!.outcome, 'pending', 'the forgery shows');
    assert.equal(home.hearth.audit.verify().ok, false);
  });

  it('the last entry deleted: verify fails (the id sequence is past it)', async () => {
    const id = await unlock(home);
    await home.hearth.audit.durable();
    deleteLastRow(path());
    const v = home.hearth.audit.verify();
    assert.equal(v.ok, false, 'a cut tail is detected');
    assert.equal(v.firstBroken?.kind, 'truncated');
    assert.match(v.firstBroken!.reason, /id sequence is at \d+/);
    assert.notEqual(home.hearth.audit.get(id)?.outcome, 'confirmed');
  });
});

/** A home whose audit has a key and a digest file, in a directory of their own removed after the tests. */
function useKeyedHome() {
  const keys = mkdtempSync(join(tmpdir(), 'hearth-audit-keys-'));
  const settings = { 'audit.digestFile': join(keys, 'audit.digest.json'), 'audit.keyFile': join(keys, 'audit.key') };
  const home = useHome({ travelMs: 50, extraSettings: settings });
  after(() => rmSync(keys, { recursive: true, force: true }));
  return { home, settings };
}

describe('audit tampering, with the audit key and the digest file', () => {
  const { home, settings } = useKeyedHome();

  it('the last call rewritten, every hash after it recomputed and the digest rewritten: verify fails', async () => {
    const id = await unlock(home);
    home.hearth.audit.flushDigest();
    const path = home.hearth.db.name;
    const args = ['audit', 'verify', '--db', path, ...Object.entries(settings).flatMap(([k, v]) => ['--set', `${k}=${v}`])];
    const good = await runHearth(args, { cwd: home.dir });
    assert.equal(good.code, 0, good.stderr);

    // The unlock is the tail: without the digest, rewriting it is the one change a chain alone cannot show.
    forgeOutcome(path, id, { outcome: 'failed', error: 'jammed' }, true);
    assert.equal(home.hearth.audit.get(id)!.outcome, 'failed', 'the forgery shows');
    let bad = await runHearth(args, { cwd: home.dir });
    assert.equal(bad.code, 1, `the signed digest no longer matches: ${bad.stdout}`);
    assert.match(bad.stderr, /audit chain BROKEN/);

    // A forger without the key can write a digest that matches, but not sign it.
    withRaw(path, (raw) => hashes.writeDigestFile(settings['audit.digestFile'], hashes.computeDigest(raw)));
    bad = await runHearth(args, { cwd: home.dir });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /not signed, but there is an audit key/);
  });
});

describe('audit tampering while Hearth runs, with the audit key and the digest file', () => {
  const { home, settings } = useKeyedHome();

  it('a chain rewritten below the last digest is not signed by the next one', async () => {
    const id = await unlock(home);
    home.hearth.audit.flushDigest();
    const path = home.hearth.db.name;
    // Every hash from the unlock's outcome on recomputed: the chain alone looks whole.
    forgeOutcome(path, id, { outcome: 'failed', error: 'jammed' }, true);
    await lamp(home, 'turn_on');
    home.hearth.audit.flushDigest();
    const args = ['audit', 'verify', '--db', path, ...Object.entries(settings).flatMap(([k, v]) => ['--set', `${k}=${v}`])];
    const res = await runHearth(args, { cwd: home.dir });
    assert.equal(res.code, 1, `the forgery was signed: ${res.stdout}`);
    assert.match(res.stderr, /audit chain BROKEN/);
    assert.ok(home.logs.find(/no longer has the hash the last digest vouched for/).length >= 1);

    // Issue 40: an owner who has looked accepts, shown the evidence; the running Hearth then signs again.
    const accept = ['audit', 'accept', ...args.slice(2)];
    const accepted = await runHearth(accept, { cwd: home.dir });
    assert.equal(accepted.code, 0, accepted.stderr);
    assert.match(accepted.stdout, /found: row \d+: hash differs from the digest/);
    await lamp(home, 'turn_off');
    home.hearth.audit.flushDigest();
    const after = await runHearth(args, { cwd: home.dir });
    assert.equal(after.code, 0, after.stderr);
    assert.match(after.stdout, /^chain verified/);
  });
});
