// A temp folder of real SQLite files for the audit tests, closed and removed after the file's tests.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import type { Db } from '../../src/db/database.js';

export function tempDatabases(prefix: string): { root: string; open: Db[] } {
  const root = mkdtempSync(join(tmpdir(), prefix));
  /** Connections to close at the end (migrated databases and raw ones alike). */
  const open: Db[] = [];
  after(() => {
    for (const db of open) if (db.open) db.close();
    rmSync(root, { recursive: true, force: true });
  });
  return { root, open };
}
