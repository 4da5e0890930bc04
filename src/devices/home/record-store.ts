// One store per concept of the home (floors, areas, a person's choices for a device or an entity), as Home
// Assistant's registries have them: immutable records by id, kept in one SQLite table (migration 0016) and in
// memory, every change announced once as create / update / remove so that each consumer (the registry, and
// through it the tool set, the page's events and the offline model's vocabulary) recomputes once per change.
// Without a database (a Hearth for tool statistics, tests) the records live for the run.
import { EventEmitter } from 'node:events';
import type { Db } from '../../db/database.js';

export type RecordChange<T> =
  | { type: 'create'; id: string; after: T }
  | { type: 'update'; id: string; before: T; after: T }
  | { type: 'remove'; id: string; before: T };

export interface RecordStoreEvents<T> {
  change: [change: RecordChange<T>];
}

export class RecordStore<T extends object> extends EventEmitter<RecordStoreEvents<T>> {
  private readonly records = new Map<string, Readonly<T>>();
  private readonly write?: { put: { run(id: string, record: string): unknown }; drop: { run(id: string): unknown } };

  /**
   * `table`: one of migration 0016's. `read` checks a stored record (a row written by hand or an older
   * version): one it cannot use is skipped, never a reason not to start.
   */
  constructor(db: Db | undefined, table: 'home_floors' | 'home_areas' | 'home_devices' | 'home_entities', read: (raw: unknown) => T | undefined) {
    super();
    if (!db) return;
    for (const row of db.prepare(`SELECT id, record FROM ${table}`).all() as Array<{ id: string; record: string }>) {
      let record: T | undefined;
      try {
        record = read(JSON.parse(row.record));
      } catch {
        record = undefined;
      }
      if (record) this.records.set(row.id, Object.freeze(record));
    }
    this.write = {
      put: db.prepare(`INSERT INTO ${table} (id, record) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET record = excluded.record`),
      drop: db.prepare(`DELETE FROM ${table} WHERE id = ?`),
    };
  }

  get(id: string): Readonly<T> | undefined {
    return this.records.get(id);
  }

  all(): Array<Readonly<T>> {
    return [...this.records.values()];
  }

  entries(): Array<[string, Readonly<T>]> {
    return [...this.records.entries()];
  }

  get size(): number {
    return this.records.size;
  }

  /** Store a record (durable before it is announced); nothing is announced when it is the same as before. */
  set(id: string, record: T): Readonly<T> {
    const before = this.records.get(id);
    if (before && JSON.stringify(before) === JSON.stringify(record)) return before;
    const after = Object.freeze({ ...record });
    this.write?.put.run(id, JSON.stringify(after));
    this.records.set(id, after);
    this.emit('change', before ? { type: 'update', id, before, after } : { type: 'create', id, after });
    return after;
  }

  remove(id: string): Readonly<T> | undefined {
    const before = this.records.get(id);
    if (!before) return undefined;
    this.write?.drop.run(id);
    this.records.delete(id);
    this.emit('change', { type: 'remove', id, before });
    return before;
  }
}
