// Issue 40 (low): hearth.db, its -wal and -shm were created world-readable (0644 under umask 022): another local
// user read the audit and the session tables. The database, its side files, the embedded broker's credential
// beside it, and the audit's digest, sequence and key files are the owner's alone (0600) whatever the umask; a
// database an older Hearth left 0644 is made so at start. A real `hearth start` under umask 022, a real call.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { openDatabase } from '../../src/db/database.js';
import { runHearth } from '../helpers/cli.js';
import { useHearthStart } from '../helpers/use-hearth-start.js';
import { waitFor } from '../helpers/wait.js';

// The umask of whoever starts Hearth on a usual system: new files 0644 unless Hearth says otherwise.
const umask = process.umask(0o022);
after(() => void process.umask(umask));

const dir = mkdtempSync(join(tmpdir(), 'hearth-modes-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const digestFile = join(dir, 'digest', 'audit.digest');
const keyFile = join(dir, 'keys', 'audit.key');
const db = join(dir, 'h.db');

// An older Hearth left the database readable by others (what better-sqlite3 makes under umask 022).
before(() => {
  new Database(db).close();
  chmodSync(db, 0o644);
});
const hearth = useHearthStart(dir, ['--set', `audit.digest_file=${digestFile}`, '--set', `audit.key_file=${keyFile}`]);

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8).padStart(4, '0');

describe("security: the files the trust rests on are the owner's alone, whatever the umask", () => {
  it('hearth.db, -wal, -shm, the broker credential, the digest, sequence and key files are 0600', async () => {
    const call = await runHearth(['call', 'living_room_lamp', '{"action":"turn_on"}', '--db', hearth.db], { cwd: dir });
    assert.equal(call.code, 0, call.stderr);
    const files = [db, `${db}-wal`, `${db}-shm`, `${db}.broker`, keyFile, `${keyFile}.seq`];
    for (const f of files) assert.equal(mode(f), '0600', f);
    // The digest follows the call within a moment.
    await waitFor('the digest is written', () => existsSync(digestFile), 5000);
    assert.equal(mode(digestFile), '0600');
  });

  it('a new database, and the -wal and -shm SQLite makes beside it, are 0600 under umask 022', () => {
    const fresh = join(dir, 'fresh', 'other.db');
    const opened = openDatabase(fresh);
    try {
      // Open, migrated, in WAL mode: SQLite has made its side files.
      for (const f of [fresh, `${fresh}-wal`, `${fresh}-shm`]) assert.equal(mode(f), '0600', f);
    } finally {
      opened.close();
    }
  });
});
