// What the stores of ids given once share: device ids (device-ids.ts, unique across the home) and entity keys
// (entity-keys.ts, unique within their device). An identity at its source is given an id within a scope (a source,
// a device) once; the ids are held in memory, read from SQLite at start and, for one another process gave since, on
// demand; new ones are written at commit(), in one transaction per batch; a database that cannot be read or written
// is said once, and the run goes on with the ids it holds. What an id is made of, and when one is taken, is each
// store's own.
import type { Db } from '../db/database.js';
import { StoreTrouble } from '../db/store-trouble.js';
import type { Logger } from '../log.js';

export interface IdStoreShape {
  /** The table: `<scope>, identity, <id>, first_seen`, one row per scope and identity. */
  table: string;
  scope: string;
  id: string;
  /** Where an id is unique: within its scope (an entity key within its device), or across the store (a device id). */
  uniqueWithin: 'scope' | 'store';
  log?: Logger;
  /** Said once per run when the database cannot be read or written. */
  notStored: string;
  /** Said when another process stored some of a batch's identities a moment before (its rows stand from its next start on). */
  lost: (lost: number) => string;
}

interface Pending {
  scope: string;
  identity: string;
  id: string;
  at: string;
}

export abstract class IdStore {
  /** `<scope>\0<identity>` -> id. */
  private readonly byIdentity = new Map<string, string>();
  /** The ids held, per scope (one set for the whole store when ids are unique across it). */
  private readonly held = new Map<string, Set<string>>();
  private pending: Pending[] = [];
  private readonly trouble: StoreTrouble;
  private readonly statements?: {
    insert: { run(scope: string, identity: string, id: string, at: string): { changes: number } };
    identity: { get(scope: string, identity: string): unknown };
    dropScope: { run(scope: string): unknown };
    dropId: { run(scope: string, id: string): unknown };
  };

  protected constructor(
    protected readonly db: Db | undefined,
    private readonly shape: IdStoreShape,
  ) {
    this.trouble = new StoreTrouble(shape.log, shape.notStored);
    if (!db) return;
    const { table, scope, id } = shape;
    for (const row of db.prepare(`SELECT ${scope} AS scope, identity, ${id} AS id FROM ${table}`).all() as Array<{
      scope: string;
      identity: string;
      id: string;
    }>)
      this.keep(row.scope, row.identity, row.id);
    this.statements = {
      insert: db.prepare(`INSERT INTO ${table} (${scope}, identity, ${id}, first_seen) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`),
      identity: db.prepare(`SELECT ${id} AS id FROM ${table} WHERE ${scope} = ? AND identity = ?`),
      dropScope: db.prepare(`DELETE FROM ${table} WHERE ${scope} = ?`),
      dropId: db.prepare(`DELETE FROM ${table} WHERE ${scope} = ? AND ${id} = ?`),
    };
  }

  /** How many identities hold an id. */
  get size(): number {
    return this.byIdentity.size;
  }

  /** Write the ids given since the last commit, in one transaction. */
  commit(): void {
    if (!this.pending.length) return;
    const batch = this.pending;
    this.pending = [];
    if (!this.db || !this.statements) return;
    const insert = this.statements.insert;
    try {
      let lost = 0;
      this.db.transaction(() => {
        for (const p of batch) lost += 1 - insert.run(p.scope, p.identity, p.id, p.at).changes;
      })();
      if (lost) this.shape.log?.warn({ lost }, this.shape.lost(lost));
    } catch (err) {
      this.trouble.say(err);
    }
  }

  /** The id an identity of a scope holds in this run, if it has one. */
  protected givenTo(scope: string, identity: string): string | undefined {
    return this.byIdentity.get(`${scope}\u0000${identity}`);
  }

  /** The id an identity holds: in this run, else one another process (the daemon, a `hearth call`) stored since it started. */
  protected known(scope: string, identity: string): string | undefined {
    const held = this.givenTo(scope, identity);
    if (held !== undefined) return held;
    const stored = this.read(() => this.statements?.identity.get(scope, identity) as { id: string } | undefined);
    if (stored) this.keep(scope, identity, stored.id);
    return stored?.id;
  }

  /** Whether an identity holds this id (in this scope, where ids are unique within one). */
  protected holds(id: string, scope = ''): boolean {
    return !!this.held.get(this.heldIn(scope))?.has(id);
  }

  /** Give an identity its id: held at once, written at the next commit(). */
  protected give(scope: string, identity: string, id: string): string {
    this.keep(scope, identity, id);
    this.pending.push({ scope, identity, id, at: new Date().toISOString() });
    return id;
  }

  /** Hold an id for this run only (not stored). */
  protected keep(scope: string, identity: string, id: string): string {
    this.byIdentity.set(`${scope}\u0000${identity}`, id);
    const at = this.heldIn(scope);
    let ids = this.held.get(at);
    if (!ids) this.held.set(at, (ids = new Set()));
    ids.add(id);
    return id;
  }

  /** Forget a scope's ids (all, or these): in memory, in the batch not written yet, and in the database. */
  protected forget(scope: string, ids?: ReadonlySet<string>): void {
    const gone = (id: string) => !ids || ids.has(id);
    const prefix = `${scope}\u0000`;
    const held = this.held.get(this.heldIn(scope));
    for (const [at, id] of this.byIdentity)
      if (at.startsWith(prefix) && gone(id)) {
        this.byIdentity.delete(at);
        held?.delete(id);
      }
    if (!ids && this.shape.uniqueWithin === 'scope') this.held.delete(scope);
    this.pending = this.pending.filter((p) => p.scope !== scope || !gone(p.id));
    if (!this.db || !this.statements) return;
    const { dropScope, dropId } = this.statements;
    try {
      this.db.transaction(() => {
        if (!ids) dropScope.run(scope);
        else for (const id of ids) dropId.run(scope, id);
      })();
    } catch (err) {
      // Not forgotten in the database: a restart would hold the ids again. Said, and forgotten for this run.
      this.trouble.say(err);
    }
  }

  /** What `fn` reads from the database, or undefined (said once) when it cannot be read. */
  protected read<T>(fn: () => T): T | undefined {
    return this.trouble.read(fn);
  }

  /** Said once per run: the run goes on with the ids it holds in memory. */
  protected notStored(err: unknown): void {
    this.trouble.say(err);
  }

  private heldIn(scope: string): string {
    return this.shape.uniqueWithin === 'scope' ? scope : '';
  }
}
