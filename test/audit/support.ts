// A temp folder of real SQLite files for the audit tests, closed and removed after the file's tests.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import type { AuditEntry } from '../../src/audit/types.js';
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

let rid = 0;
/** An allowed lamp call by chat:alice, with a fresh request id; `over` replaces any field. */
export function auditEntry(over: Partial<AuditEntry> = {}): AuditEntry {
  return {
    requestId: `req-${++rid}`,
    principal: 'chat:alice',
    session: 's1',
    runId: null,
    tool: 'living_room_lamp',
    entityId: 'living_room.lamp',
    action: 'turn_on',
    args: { brightness: 80 },
    decision: 'allow',
    ruleId: 3,
    reason: 'rule 3 allows chat:alice to use lights',
    ...over,
  };
}
