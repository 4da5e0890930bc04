// What Hearth remembers of every entity it has known: the order in which it
// was first seen and the name it was given. A newcomer (a discovered device
// announced later, or again after a restart) must not take either from an
// older entity: the registry ranks contested command topics by first sight,
// and the tool generator never hands a remembered name to another entity.
// Kept in SQLite (migration 0006) by the assembly; in memory otherwise.
import type { Db } from '../db/database.js';
import type { Logger } from '../log.js';

export interface EntityMemory {
  /**
   * The first-seen rank of each id (lower: seen earlier); ids never seen are
   * recorded now, in the order given.
   */
  firstSeen(ids: readonly string[]): Map<string, number>;
  /** The name remembered for a key, if any. */
  nameOf(key: string): string | undefined;
  /** Whether some key holds this name. */
  nameTaken(name: string): boolean;
  /**
   * Remember a name for a key that has none; returns the name the key holds
   * afterwards (another process may have named it first).
   */
  remember(key: string, name: string): string;
}

/** For a Hearth without a database (tests, tool statistics): forgets on exit. */
export class MemoryEntityNames implements EntityMemory {
  protected readonly seq = new Map<string, number>();
  protected readonly names = new Map<string, string>();
  protected readonly holders = new Map<string, string>();

  firstSeen(ids: readonly string[]): Map<string, number> {
    const out = new Map<string, number>();
    for (const id of ids) {
      let n = this.seq.get(id);
      if (n === undefined) this.seq.set(id, (n = this.record(id)));
      out.set(id, n);
    }
    return out;
  }

  /** Store a newly seen id; returns its rank. */
  protected record(_id: string): number {
    return this.seq.size + 1;
  }

  nameOf(key: string): string | undefined {
    return this.names.get(key);
  }

  nameTaken(name: string): boolean {
    return this.holders.has(name);
  }

  remember(key: string, name: string): string {
    const held = this.names.get(key);
    if (held) return held;
    this.names.set(key, name);
    this.holders.set(name, key);
    return name;
  }
}

/** The same, in the entity_names table: read once at start, new entries written through. */
export class SqliteEntityNames extends MemoryEntityNames {
  private readonly insert;
  private readonly byId;
  private readonly setName;
  private readonly nameRow;
  private writable = true;

  constructor(private readonly db: Db, private readonly log?: Logger) {
    super();
    for (const row of db.prepare('SELECT seq, entity_id, tool_name FROM entity_names').all() as Array<{ seq: number; entity_id: string; tool_name: string | null }>) {
      this.seq.set(row.entity_id, row.seq);
      if (row.tool_name) {
        this.names.set(row.entity_id, row.tool_name);
        this.holders.set(row.tool_name, row.entity_id);
      }
    }
    this.insert = db.prepare('INSERT INTO entity_names (entity_id, first_seen) VALUES (?, ?) ON CONFLICT (entity_id) DO NOTHING');
    this.byId = db.prepare('SELECT seq, tool_name FROM entity_names WHERE entity_id = ?');
    this.setName = db.prepare('UPDATE entity_names SET tool_name = ? WHERE entity_id = ? AND tool_name IS NULL');
    this.nameRow = db.prepare('SELECT entity_id FROM entity_names WHERE tool_name = ?');
  }

  override firstSeen(ids: readonly string[]): Map<string, number> {
    if (!this.writable || ids.every((id) => this.seq.has(id))) return super.firstSeen(ids);
    try {
      // One transaction for a burst of newcomers (a thousand discovered at start).
      return this.db.transaction(() => super.firstSeen(ids))();
    } catch (err) {
      this.readOnly(err);
      return super.firstSeen(ids);
    }
  }

  protected override record(id: string): number {
    if (this.writable) {
      this.insert.run(id, new Date().toISOString());
      const row = this.byId.get(id) as { seq: number } | undefined;
      if (row) return row.seq;
    }
    // Not stored: after every stored one.
    return Number.MAX_SAFE_INTEGER / 2 + this.seq.size;
  }

  override nameTaken(name: string): boolean {
    if (super.nameTaken(name)) return true;
    // Another process (a `hearth call`) may have named an entity since we read the table.
    const row = this.nameRow.get(name) as { entity_id: string } | undefined;
    if (!row) return false;
    this.names.set(row.entity_id, name);
    this.holders.set(name, row.entity_id);
    return true;
  }

  override remember(key: string, name: string): string {
    const held = this.names.get(key);
    if (held) return held;
    if (this.writable) {
      try {
        const stored = this.db.transaction(() => {
          this.insert.run(key, new Date().toISOString());
          this.setName.run(name, key);
          return (this.byId.get(key) as { seq: number; tool_name: string | null }).tool_name;
        })();
        if (stored) name = stored;
      } catch (err) {
        // A name another process gave to another key meanwhile (UNIQUE), or a read-only database.
        if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') throw new NameTakenError(name);
        this.readOnly(err);
      }
    }
    return super.remember(key, name);
  }

  private readOnly(err: unknown): void {
    this.writable = false;
    this.log?.warn({ err }, 'entity names cannot be stored (read-only database?): names and first-seen order are kept for this run only');
  }
}

/** Another process gave this name to another entity a moment ago: pick another. */
export class NameTakenError extends Error {
  constructor(readonly toolName: string) {
    super(`tool name ${toolName} is already held by another entity`);
  }
}
