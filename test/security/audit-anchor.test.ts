// Issue 40 (high): the files the audit's trust rests on could be made to vanish. With audit.digest_file and
// audit.key_file set, a forged call appended while Hearth was stopped was named "NOT vouched for"; but delete the
// digest file (or write garbage into it) and start Hearth, and after one call `hearth audit verify` said the chain
// was verified and signed, forgery included. And an older database put back with its digest was reported as a
// rollback once: the next call wrote the next digest and verify was clean again.
// Now a digest missing or unreadable while the sequence file (beside the key) or the database says digests were
// written, a sequence file missing or unreadable, and a digest numbered below one written since are findings:
// Hearth signs nothing until an owner runs `hearth audit accept` (which prints the evidence), and verify keeps
// saying so (exit 1) until then. Real SQLite files, the real digest, key and sequence files, the real CLI, and
// the assembly (Hearth.open) on a real broker.
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { readDigest } from '../../src/audit/chain.js';
import { loadAuditKey } from '../../src/audit/key.js';
import { SqliteAuditLog } from '../../src/audit/store.js';
import { openDatabase } from '../../src/db/database.js';
import { runHearth } from '../helpers/cli.js';
import { OWNER, startHome } from '../helpers/home.js';
import { auditEntry } from '../audit/support.js';
import { logSink } from '../helpers/log-sink.js';
import { startAedes } from '../helpers/brokers.js';
import { useHearthStart } from '../helpers/use-hearth-start.js';

const root = mkdtempSync(join(tmpdir(), 'hearth-anchor-'));
after(() => rmSync(root, { recursive: true, force: true }));

interface Home {
  dir: string;
  db: string;
  digestFile: string;
  keyFile: string;
  seqFile: string;
  config: string;
}

let homes = 0;
/** A folder with a config whose digest and key are kept apart from the database, as the docs say to. */
function newHome(): Home {
  const dir = join(root, `h${++homes}`);
  mkdirSync(dir);
  const h = {
    dir,
    db: join(dir, 'hearth.db'),
    digestFile: join(dir, 'digest', 'audit.digest'),
    keyFile: join(dir, 'keys', 'audit.key'),
    config: join(dir, 'hearth.yaml'),
  };
  writeFileSync(h.config, `database:\n  path: ${h.db}\naudit:\n  digest_file: ${h.digestFile}\n  key_file: ${h.keyFile}\n`);
  return { ...h, seqFile: `${h.keyFile}.seq` };
}

const entry = auditEntry;
const FORGED = entry({ principal: 'mcp:fam', tool: 'front_door_lock', entityId: 'front_door.lock', action: 'unlock', args: { action: 'unlock' } });

/** A Hearth's audit log on the home's files, as Hearth.open makes it: it records calls, then closes (its last digest). */
function asHearth(h: Home, calls: number): ReturnType<typeof logSink> {
  const db = openDatabase(h.db);
  const logs = logSink('debug');
  const audit = new SqliteAuditLog(db, {
    log: logs.log,
    digestFile: h.digestFile,
    key: loadAuditKey(h.keyFile, { create: true }).key,
    sequenceFile: h.seqFile,
  });
  try {
    for (let i = 0; i < calls; i++) audit.record(entry(), { outcome: 'confirmed' });
    audit.flushDigest();
  } finally {
    db.close();
  }
  return logs;
}

let forgeries = 0;
/** Whoever can write the database but has no key: appends a validly chained "confirmed unlock". */
function forgeUnlock(h: Home): number {
  const db = openDatabase(h.db);
  try {
    return new SqliteAuditLog(db, {}).record({ ...FORGED, requestId: `forged-${++forgeries}` }, { outcome: 'confirmed' });
  } finally {
    db.close();
  }
}

const cli = (h: Home, ...args: string[]) => runHearth([...args, '--config', h.config], { cwd: h.dir });

/** What a file holds now (undefined: it is not there). */
const contents = (path: string) => (existsSync(path) ? readFileSync(path, 'utf8') : undefined);

/** verify says the log is not clean (exit 1, no "chain verified"), naming what `finding` matches; returns what it said. */
async function notClean(h: Home, finding: RegExp): Promise<string> {
  const r = await cli(h, 'audit', 'verify');
  assert.equal(r.code, 1, `verify must not pass: ${r.stdout}${r.stderr}`);
  assert.doesNotMatch(r.stdout, /chain verified/);
  assert.match(r.stderr, finding);
  return r.stderr;
}

/** ... and says what an owner does about it, with the command. */
function saysWhatToDo(said: string): void {
  assert.match(said, /`[^`]*audit accept` prints the evidence/, said);
}

/** An owner accepts: the evidence is printed, verify is clean, and a Hearth signs again. */
async function ownerAccepts(h: Home, evidence: RegExp[]): Promise<string> {
  const accepted = await cli(h, 'audit', 'accept');
  assert.equal(accepted.code, 0, accepted.stderr);
  for (const e of evidence) assert.match(accepted.stdout, e);
  assert.match(accepted.stdout, /vouched for \d+ entries up to id \d+: digest #\d+ written/);
  const verified = await cli(h, 'audit', 'verify');
  assert.equal(verified.code, 0, verified.stderr);
  assert.match(verified.stdout, /^chain verified/);
  const before = readDigest(h.digestFile);
  asHearth(h, 1);
  const after = readDigest(h.digestFile);
  assert.ok(after.lastId > before.lastId && after.seq! > before.seq!, 'signing resumes after the owner accepted');
  return accepted.stdout;
}

describe('security: a missing, garbage or older digest or sequence file is a finding, never a fresh start', () => {
  // Each variant: a Hearth signs two calls; a forged unlock is appended while it is stopped; the file is tampered
  // with; a Hearth starts and records a call. The forgery must not come out signed.
  const variants: Array<{ name: string; tamper: (h: Home, old: string) => void; finding: RegExp; evidence: RegExp }> = [
    {
      name: 'digest file deleted',
      tamper: (h) => rmSync(h.digestFile),
      finding: /digest file .* is missing, but the sequence file .* says digest #\d+ was written/,
      evidence: /found: digest file .* is missing/,
    },
    {
      name: 'digest file emptied',
      tamper: (h) => writeFileSync(h.digestFile, ''),
      finding: /digest file .* cannot be used \(emptied, cut short or overwritten\)/,
      evidence: /found: digest file .* cannot be used/,
    },
    {
      name: 'garbage written into the digest file',
      tamper: (h) => writeFileSync(h.digestFile, 'all is well\n'),
      finding: /digest file .* cannot be used/,
      evidence: /found: digest file .* cannot be used/,
    },
    {
      name: 'digest file cut short',
      tamper: (h) => writeFileSync(h.digestFile, readFileSync(h.digestFile, 'utf8').slice(0, 40)),
      finding: /digest file .* cannot be used/,
      evidence: /found: digest file .* cannot be used/,
    },
    {
      name: 'digest file replaced by an older one',
      tamper: (h, old) => writeFileSync(h.digestFile, old),
      finding: /is digest #\d+ of .*, but #\d+ was written since: an older digest was put back/,
      evidence: /found: .*an older digest was put back/,
    },
    {
      name: 'sequence file deleted',
      tamper: (h) => rmSync(h.seqFile),
      finding: /sequence file .* is missing, but the digest is #\d+/,
      evidence: /found: sequence file .* is missing/,
    },
    {
      name: 'garbage written into the sequence file',
      tamper: (h) => writeFileSync(h.seqFile, 'zero\n'),
      finding: /sequence file .* does not hold a digest number/,
      evidence: /found: sequence file .* does not hold a digest number/,
    },
    {
      name: 'digest, sequence file and key all deleted (a new key is made)',
      tamper: (h) => {
        for (const f of [h.digestFile, h.seqFile, h.keyFile]) rmSync(f);
      },
      finding: /digest file .* is missing, but the database notes signed digests since #1/,
      evidence: /found: digest file .* is missing, but the database notes signed digests/,
    },
  ];

  for (const v of variants) {
    it(`${v.name}: Hearth signs nothing over the forgery, verify keeps reporting it until an owner accepts`, async () => {
      const h = newHome();
      asHearth(h, 1);
      const old = readFileSync(h.digestFile, 'utf8');
      asHearth(h, 1);
      const forged = forgeUnlock(h);
      v.tamper(h, old);
      const tampered = contents(h.digestFile);
      const logs = asHearth(h, 1);
      assert.equal(contents(h.digestFile), tampered, 'no digest was signed over the forgery');
      await notClean(h, v.finding);
      // A second start and call change nothing: the finding is kept, not reported once.
      asHearth(h, 1);
      assert.equal(contents(h.digestFile), tampered);
      saysWhatToDo(await notClean(h, v.finding));
      assert.equal(logs.find(/a file the audit's trust rests on was tampered with/).length, 1, 'said at start');
      const said = await ownerAccepts(h, [v.evidence, /the last digest number known: #\d+/]);
      // The forged unlock is among the entries the owner is shown as not vouched for.
      const [, from, to] = /not vouched for by any signed digest: \d+ entries, ids (\d+)\.\.(\d+)/.exec(said) ?? [];
      assert.ok(Number(from) <= forged && forged <= Number(to), said);
    });
  }

  it('a home whose key was just made (no digest yet) starts fresh, as before: no finding', async () => {
    const h = newHome();
    const logs = asHearth(h, 2);
    assert.equal(logs.find(/tampered with/).length, 0);
    assert.equal(readFileSync(h.seqFile, 'utf8').trim(), String(readDigest(h.digestFile).seq));
    const r = await cli(h, 'audit', 'verify');
    assert.equal(r.code, 0, r.stderr);
  });
});

describe('security: the attack as reported, through the assembly on a real broker', () => {
  const settings = (h: Home) => ({ 'database.path': h.db, 'audit.digestFile': h.digestFile, 'audit.keyFile': h.keyFile });

  /** Start Hearth on the home's files (a broker of its own: a stopped home leaves its devices offline), make one confirmed lamp call, stop it. */
  async function oneCall(h: Home): Promise<ReturnType<typeof logSink>> {
    const broker = await startAedes();
    const home = await startHome(broker, { travelMs: 50, extraSettings: settings(h) }).catch(async (err) => {
      await broker.stop();
      throw err;
    });
    try {
      const r = await home.hearth.tools.call('living_room_lamp', { action: 'turn_on' }, OWNER);
      assert.match(r.text!, /^confirmed/);
      return home.logs;
    } finally {
      await home.close();
      await broker.stop();
    }
  }

  it('a forged row, then garbage in the digest file, then a start and one call: verify still says NOT clean', async () => {
    const h = newHome();
    await oneCall(h);
    forgeUnlock(h);
    const before = await cli(h, 'audit', 'verify');
    assert.match(before.stdout + before.stderr, /NOT vouched for/, 'the forgery is named before the attack goes on');
    writeFileSync(h.digestFile, '\u0000garbage');
    const logs = await oneCall(h);
    assert.equal(contents(h.digestFile), '\u0000garbage', 'Hearth did not sign a fresh digest over the forgery');
    saysWhatToDo(await notClean(h, /digest file .* cannot be used/));
    assert.ok(logs.find(/a file the audit's trust rests on was tampered with/).length >= 1);
  });

  it('an older database and its digest put back: reported as a rollback, and still after the next call', async () => {
    const h = newHome();
    await oneCall(h);
    // The attacker keeps a copy of the database and its digest (Hearth stopped: the database is one file).
    copyFileSync(h.db, join(h.dir, 'old.db'));
    copyFileSync(h.digestFile, join(h.dir, 'old.digest'));
    await oneCall(h);
    forgeUnlock(h);
    // ... and later puts them back.
    for (const side of ['-wal', '-shm']) rmSync(`${h.db}${side}`, { force: true });
    copyFileSync(join(h.dir, 'old.db'), h.db);
    copyFileSync(join(h.dir, 'old.digest'), h.digestFile);
    await notClean(h, /an older digest was put back \(a rollback/);
    const seq = Number(readFileSync(h.seqFile, 'utf8'));
    await oneCall(h);
    assert.equal(Number(readFileSync(h.seqFile, 'utf8')), seq, 'no digest numbered past the gap');
    saysWhatToDo(await notClean(h, /an older digest was put back \(a rollback/));
    const accepted = await cli(h, 'audit', 'accept');
    assert.equal(accepted.code, 0, accepted.stderr);
    assert.match(accepted.stdout, /found: .*an older digest was put back/);
    assert.match(accepted.stdout, new RegExp(`the last digest number known: #${seq}`));
    assert.equal((await cli(h, 'audit', 'verify')).code, 0);
  });
});

describe('security: the start banner says NOT vouched for, never "chain verified", over a forged entry', () => {
  const h = newHome();
  // `hearth start` keeps its database at h.db in the folder it is given.
  const home = { ...h, db: join(h.dir, 'h.db') };
  before(() => {
    asHearth(home, 1);
    forgeUnlock(home);
  });
  const started = useHearthStart(h.dir, ['--set', `audit.digest_file=${h.digestFile}`, '--set', `audit.key_file=${h.keyFile}`]);

  it('the banner names the entries and the command to run', () => {
    const out = started.bridge.stdout();
    assert.match(out, /database .*\(ids 2\.\.2\) NOT vouched for by a signed digest: .*audit verify/);
    assert.doesNotMatch(out, /chain verified/);
  });
});
