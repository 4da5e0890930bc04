// Opening the SQLite file and bringing its schema up to date. Migrations are
// numbered SQL files in migrations/ (0001_init.sql, ...), applied in order in
// one transaction each and tracked with PRAGMA user_version.
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { createPrivate, makePrivate } from '../util/private-file.js';

export type Db = Database.Database;

export const MIGRATIONS_DIR = resolve(fileURLToPath(new URL('../../migrations', import.meta.url)));

export class DatabaseError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
    this.name = 'DatabaseError';
  }
}

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function listMigrations(dir = MIGRATIONS_DIR): Migration[] {
  const out: Migration[] = [];
  for (const file of readdirSync(dir).sort()) {
    const m = /^(\d{4})_([\w-]+)\.sql$/.exec(file);
    if (!m) continue;
    out.push({ version: Number(m[1]), name: m[2], sql: readFileSync(join(dir, file), 'utf8') });
  }
  out.forEach((m, i) => {
    if (m.version !== i + 1)
      throw new DatabaseError(`migrations must be numbered 0001, 0002, ... without gaps: found ${m.version} at position ${i + 1}`, 'BAD_MIGRATIONS');
  });
  return out;
}

export interface OpenOptions {
  readonly?: boolean;
  migrationsDir?: string;
  /** Apply migrations up to this version only (tests of older schemas). */
  upTo?: number;
}

/**
 * The database holds the audit, sessions and tokens: it and its side files are the owner's alone (0600), whatever
 * the umask. It is created so before SQLite opens it (SQLite gives the -wal and -shm it creates the database's
 * mode), and files an older Hearth left readable by others are made so.
 */
function privateFiles(path: string): void {
  mkdirSync(dirname(path), { recursive: true });
  createPrivate(path);
  for (const f of [path, `${path}-wal`, `${path}-shm`]) makePrivate(f);
}

/** Open (creating if needed) and migrate. A database newer than this code stops here. */
export function openDatabase(path: string, options: OpenOptions = {}): Db {
  if (path !== ':memory:' && path !== '' && !options.readonly) privateFiles(path);
  let db: Db;
  try {
    db = new Database(path, { readonly: options.readonly ?? false, fileMustExist: options.readonly ?? false });
  } catch (err) {
    throw new DatabaseError(`cannot open database ${path}: ${(err as Error).message}`, 'OPEN_FAILED');
  }
  try {
    if (!options.readonly) db.pragma('journal_mode = WAL');
    db.pragma('foreign_keys = ON');
    db.pragma('busy_timeout = 2000');
    const migrations = listMigrations(options.migrationsDir);
    const target = options.upTo ?? migrations.length;
    const current = db.pragma('user_version', { simple: true }) as number;
    if (current > migrations.length) {
      throw new DatabaseError(
        `database ${path} has schema version ${current}, but this Hearth knows only up to ${migrations.length}: ` +
          `it was written by a newer Hearth. Upgrade Hearth, or point database.path at another file.`,
        'TOO_NEW',
      );
    }
    if (current < target && options.readonly) {
      throw new DatabaseError(`database ${path} is at schema version ${current} and is read-only: cannot migrate`, 'READONLY');
    }
    for (const m of migrations.slice(current, target)) {
      db.transaction(() => {
        db.exec(m.sql);
        db.pragma(`user_version = ${m.version}`);
      })();
    }
    return db;
  } catch (err) {
    db.close();
    if (err instanceof DatabaseError) throw err;
    throw new DatabaseError(`cannot prepare database ${path}: ${(err as Error).message}`, 'MIGRATION_FAILED');
  }
}
