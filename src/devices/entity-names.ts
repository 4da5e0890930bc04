// What Hearth remembers of every entity it has known: the order in which it
// was first seen and the name it was given. A newcomer (a discovered device
// announced later, or again after a restart) must not take either from an
// older entity: the registry ranks contested command topics by first sight,
// and the tool generator never hands a remembered name to another entity.
// Kept in SQLite (migration 0006) by the assembly; in memory otherwise. Also what a device whose move waits keeps
// of its sensors (HeldForm, migration 0022), so the move waits whole across a restart.
import type { Db } from '../db/database.js';
import { StoreTrouble } from '../db/store-trouble.js';
import type { Logger } from '../log.js';
import { type Entity, entityWith } from './model.js';
import { deviceOfEntityId } from './topic-owners.js';

export interface EntityMemory {
  /**
   * The first-seen rank of each id (lower: seen earlier); ids never seen are
   * recorded now, in the order given.
   */
  firstSeen(ids: readonly string[]): Map<string, number>;
  /** The name remembered for a key, and the base it was made from. */
  nameOf(key: string): RememberedName | undefined;
  /** The key holding this name, if any. */
  holderOf(name: string): string | undefined;
  /**
   * Remember a key's name (replacing the one it had: its entity was renamed).
   * Throws NameTakenError when another key holds the name.
   */
  remember(key: string, name: string, base: string): void;
  /** These entities are here now (the registry says so after each change; a store may note it). */
  seen?(ids: readonly string[]): void;
  /**
   * The command topics these admitted discovered entities have now (each replacing what it had), remembered as
   * long as the entity is: the embedded broker keeps gating them after a restart, before the device re-announces.
   */
  rememberCommandTopics?(entities: ReadonlyMap<string, readonly string[]>): void;
  /** Whether a remembered entity is commanded on this topic. */
  remembersCommandTopic?(topic: string): boolean;
  /** Every remembered entity's command topics (entity id -> topics): who holds which topic, present or away. */
  rememberedCommandTopics?(): ReadonlyMap<string, readonly string[]>;
  /**
   * The state topics (stateTopicsOf) these admitted discovered entities read now (each replacing what it had),
   * remembered as long as the entity is: a state topic stays its device's while the device is away (migration 0024).
   */
  rememberStateTopics?(entities: ReadonlyMap<string, readonly string[]>): void;
  /** Every remembered entity's state topics (entity id -> topics): who reads which topic, present or away. */
  rememberedStateTopics?(): ReadonlyMap<string, readonly string[]>;
  /**
   * What the entities of a device whose move waits keep (HeldForm: as the registry had them before the move), each
   * replacing what it kept; `undefined` lets an entity's go (its device no longer moves). Remembered across
   * restarts, so a move waits whole after one too.
   */
  rememberHeldForms?(forms: ReadonlyMap<string, HeldForm | undefined>): void;
  /** What this entity keeps while its device's move waits, if anything (UNREADABLE_HELD_FORM: kept, not readable). */
  heldForm?(entityId: string): HeldForm | typeof UNREADABLE_HELD_FORM | undefined;
  /** The entities that keep a held form now. */
  heldEntities?(): Iterable<string>;
  /**
   * Forget everything remembered of a device's entities (rank, tool names, command and state topics): a person said it is
   * gone. Returns the entity ids forgotten.
   */
  forgetDevice?(deviceId: string): string[];
  /** Forget these entities (a person said their device no longer has them). Returns the entity ids forgotten. */
  forgetEntities?(entityIds: readonly string[]): string[];
  /** Every entity remembered (ranked, named, or holding topics or a held form). */
  rememberedEntities?(): Iterable<string>;
}

/**
 * What an entity that follows its device's move keeps while the move waits, as it was before the move: its name,
 * tool base, state topic and where its readings are found. A reading's transform (a compiled template) is code,
 * not data: `transform` says the entity read through one, and the source's current one is used.
 */
export interface HeldForm {
  name: string;
  toolBase?: string;
  stateTopic?: string;
  valuePath?: string;
  transform?: boolean;
  attributes: Record<string, { topic?: string; path?: string; transform?: boolean }>;
}

/**
 * A held form the database keeps that Hearth cannot read (a hand edit, a damaged file). Its entity is withheld while
 * its device's move waits: letting it follow the source would be the forged rename the held form is there to stop.
 */
export const UNREADABLE_HELD_FORM = 'unreadable' as const;

/** A stored held form, checked field by field; undefined when it is not one Hearth wrote. */
export function parseHeldForm(text: string): HeldForm | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  const isObject = (x: unknown): x is Record<string, unknown> => !!x && typeof x === 'object' && !Array.isArray(x);
  const optional = (o: Record<string, unknown>, k: string, type: string) => o[k] === undefined || typeof o[k] === type;
  if (!isObject(v) || typeof v.name !== 'string' || !isObject(v.attributes)) return undefined;
  if (!['toolBase', 'stateTopic', 'valuePath'].every((k) => optional(v, k, 'string')) || !optional(v, 'transform', 'boolean')) return undefined;
  for (const a of Object.values(v.attributes)) {
    if (!isObject(a) || !optional(a, 'topic', 'string') || !optional(a, 'path', 'string') || !optional(a, 'transform', 'boolean')) return undefined;
  }
  return v as unknown as HeldForm;
}

/** The held form of an entity, as data. */
export function heldFormOf(e: Entity): HeldForm {
  return {
    name: e.name,
    ...(e.toolBase !== undefined ? { toolBase: e.toolBase } : {}),
    ...(e.stateTopic !== undefined ? { stateTopic: e.stateTopic } : {}),
    ...(e.valuePath !== undefined ? { valuePath: e.valuePath } : {}),
    ...(e.transform ? { transform: true } : {}),
    attributes: Object.fromEntries(
      Object.entries(e.attributes).map(([k, a]) => [
        k,
        {
          ...(a.topic !== undefined ? { topic: a.topic } : {}),
          ...(a.path !== undefined ? { path: a.path } : {}),
          ...(a.transform ? { transform: true } : {}),
        },
      ]),
    ),
  };
}

/**
 * `e` as it was: the held form laid over what the source says now. Transforms are the source's current ones, kept
 * only where the held form read through one; readings the held form did not have are not read.
 */
export function withHeldForm(e: Entity, held: HeldForm): Entity {
  const attributes: Entity['attributes'] = {};
  for (const [k, a] of Object.entries(held.attributes)) {
    const transform = a.transform ? e.attributes[k]?.transform : undefined;
    attributes[k] = {
      ...(a.topic !== undefined ? { topic: a.topic } : {}),
      ...(a.path !== undefined ? { path: a.path } : {}),
      ...(transform ? { transform } : {}),
    };
  }
  return entityWith(e, {
    name: held.name,
    toolBase: held.toolBase,
    stateTopic: held.stateTopic,
    valuePath: held.valuePath,
    transform: held.transform ? e.transform : undefined,
    attributes,
  });
}

export interface RememberLimits {
  /** Forget an entity not seen for this many days. */
  days: number;
  /** Remember at most this many; the longest unseen go first. */
  max: number;
}

/** How often `seen` writes (an entity present all along needs its mark refreshed now and then, not on every change). */
const SEEN_EVERY_MS = 60 * 60 * 1000;

export interface RememberedName {
  name: string;
  base: string;
}

/** For a Hearth without a database (tests, tool statistics): forgets on exit. */
export class MemoryEntityNames implements EntityMemory {
  seen(_ids: readonly string[]): void {
    // Nothing to forget in memory: it ends with the process.
  }

  protected readonly seq = new Map<string, number>();
  protected readonly names = new Map<string, RememberedName>();
  protected readonly holders = new Map<string, string>();
  /** entity id -> its command topics, and topic -> the entities commanded on it. */
  protected readonly topicsOf = new Map<string, readonly string[]>();
  private readonly topicHolders = new Map<string, Set<string>>();
  /** entity id -> the state topics it reads. */
  protected readonly readsOf = new Map<string, readonly string[]>();

  protected readonly held = new Map<string, HeldForm | typeof UNREADABLE_HELD_FORM>();

  rememberHeldForms(forms: ReadonlyMap<string, HeldForm | undefined>): void {
    const changed = [...forms].filter(([id, form]) => (form ? JSON.stringify(this.held.get(id)) !== JSON.stringify(form) : this.held.has(id)));
    if (changed.length) this.storeHeld(changed);
  }

  heldForm(entityId: string): HeldForm | typeof UNREADABLE_HELD_FORM | undefined {
    return this.held.get(entityId);
  }

  heldEntities(): Iterable<string> {
    return this.held.keys();
  }

  /** Record changed held forms; a store writes them first. */
  protected storeHeld(changed: ReadonlyArray<readonly [string, HeldForm | undefined]>): void {
    for (const [id, form] of changed) {
      if (form) this.held.set(id, form);
      else this.held.delete(id);
    }
  }

  rememberCommandTopics(entities: ReadonlyMap<string, readonly string[]>): void {
    const changed = [...entities].filter(([id, topics]) => !sameTopics(this.topicsOf.get(id), topics));
    if (changed.length) this.storeTopics(changed);
  }

  remembersCommandTopic(topic: string): boolean {
    return !!this.topicHolders.get(topic)?.size;
  }

  rememberedCommandTopics(): ReadonlyMap<string, readonly string[]> {
    return this.topicsOf;
  }

  rememberStateTopics(entities: ReadonlyMap<string, readonly string[]>): void {
    const changed = [...entities].filter(([id, topics]) => !sameTopics(this.readsOf.get(id), topics));
    if (changed.length) this.storeStateTopics(changed);
  }

  rememberedStateTopics(): ReadonlyMap<string, readonly string[]> {
    return this.readsOf;
  }

  /** Record changed state topics; a store writes them first. */
  protected storeStateTopics(changed: ReadonlyArray<readonly [string, readonly string[]]>): void {
    for (const [id, topics] of changed) {
      if (topics.length) this.readsOf.set(id, topics);
      else this.readsOf.delete(id);
    }
  }

  forgetDevice(deviceId: string): string[] {
    const keys = new Set(
      [...this.seq.keys(), ...this.names.keys(), ...this.topicsOf.keys(), ...this.readsOf.keys(), ...this.held.keys()].filter(
        (k) => deviceOfEntityId(k) === deviceId,
      ),
    );
    this.drop(keys);
    return [...new Set([...keys].map((k) => k.split('#', 1)[0]!))].sort();
  }

  forgetEntities(entityIds: readonly string[]): string[] {
    const wanted = new Set(entityIds);
    const keys = new Set([...this.rememberedKeys()].filter((k) => wanted.has(k.split('#', 1)[0]!)));
    this.drop(keys);
    return [...new Set([...keys].map((k) => k.split('#', 1)[0]!))].sort();
  }

  rememberedEntities(): Iterable<string> {
    return new Set([...this.rememberedKeys()].map((k) => k.split('#', 1)[0]!));
  }

  private rememberedKeys(): Set<string> {
    return new Set([...this.seq.keys(), ...this.names.keys(), ...this.topicsOf.keys(), ...this.readsOf.keys(), ...this.held.keys()]);
  }

  /** Forget these keys (entity ids, `<entity id>#<part>`) in memory. */
  protected drop(keys: ReadonlySet<string>): void {
    for (const key of keys) {
      this.seq.delete(key);
      const name = this.names.get(key);
      if (name && this.holders.get(name.name) === key) this.holders.delete(name.name);
      this.names.delete(key);
      if (this.topicsOf.has(key)) {
        this.keepTopics(key, []);
        this.topicsOf.delete(key);
      }
      this.held.delete(key);
      this.readsOf.delete(key);
    }
  }

  /** Record changed topics; a store writes them first. */
  protected storeTopics(changed: ReadonlyArray<readonly [string, readonly string[]]>): void {
    for (const [id, topics] of changed) this.keepTopics(id, topics);
  }

  protected keepTopics(id: string, topics: readonly string[]): void {
    for (const t of this.topicsOf.get(id) ?? []) {
      const held = this.topicHolders.get(t);
      held?.delete(id);
      if (held && !held.size) this.topicHolders.delete(t);
    }
    this.topicsOf.set(id, topics);
    for (const t of topics) {
      let held = this.topicHolders.get(t);
      if (!held) this.topicHolders.set(t, (held = new Set()));
      held.add(id);
    }
  }

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

  nameOf(key: string): RememberedName | undefined {
    return this.names.get(key);
  }

  holderOf(name: string): string | undefined {
    return this.holders.get(name);
  }

  remember(key: string, name: string, base: string): void {
    const holder = this.holders.get(name);
    if (holder !== undefined && holder !== key) throw new NameTakenError(name);
    this.keep(key, name, base);
  }

  protected keep(key: string, name: string, base: string): void {
    const before = this.names.get(key);
    if (before && this.holders.get(before.name) === key) this.holders.delete(before.name);
    this.names.set(key, { name, base });
    this.holders.set(name, key);
  }
}

/** The same, in the entity_names table: read once at start, new entries written through. */
export class SqliteEntityNames extends MemoryEntityNames {
  private readonly insert;
  private readonly byId;
  private readonly setName;
  private readonly nameRow;
  private readonly keyRow;
  private readonly trouble: StoreTrouble;

  private readonly touch;
  private lastTouch = 0;
  private readonly dropTopics;
  private readonly addTopic;
  private readonly deviceRows;
  private readonly entityRows;
  private readonly dropEntityRows;
  private readonly dropDeviceTopics;
  private readonly dropReads;
  private readonly addRead;
  private readonly dropDeviceReads;
  private readonly dropDeviceNames;
  private readonly setHeld;
  private readonly dropDeviceHeld;
  private readonly dropHeld;

  constructor(
    private readonly db: Db,
    private readonly log?: Logger,
    limits: RememberLimits = { days: 90, max: 20_000 },
  ) {
    super();
    this.trouble = new StoreTrouble(log, 'entity names could not be stored (read-only or locked database?): what is not stored is kept for this run only');
    this.forget(limits);
    this.touch = db.prepare("UPDATE entity_names SET last_seen = ? WHERE entity_id = ? OR entity_id LIKE ? || '#%'");
    const rows = db.prepare('SELECT seq, entity_id, tool_name, tool_base FROM entity_names').all() as Array<{
      seq: number;
      entity_id: string;
      tool_name: string | null;
      tool_base: string | null;
    }>;
    for (const row of rows) {
      this.seq.set(row.entity_id, row.seq);
      if (row.tool_name) super.keep(row.entity_id, row.tool_name, row.tool_base ?? '');
    }
    for (const [id, list] of topicsIn(db, 'entity_command_topics')) this.keepTopics(id, list);
    for (const [id, list] of topicsIn(db, 'entity_state_topics')) this.readsOf.set(id, list);
    for (const row of db.prepare('SELECT entity_id, form FROM entity_held_forms').all() as Array<{ entity_id: string; form: string }>) {
      const form = parseHeldForm(row.form);
      // A row Hearth did not write is a finding, never a fresh start: its entity is withheld until the move is
      // confirmed (following the source would be the forged rename the row is there to stop).
      if (!form)
        this.log?.error(
          { entity: row.entity_id },
          `the held form of ${row.entity_id} in the database could not be read: it is withheld until its device's move is confirmed`,
        );
      this.held.set(row.entity_id, form ?? UNREADABLE_HELD_FORM);
    }
    this.setHeld = db.prepare('INSERT INTO entity_held_forms (entity_id, form) VALUES (?, ?) ON CONFLICT (entity_id) DO UPDATE SET form = excluded.form');
    this.dropHeld = db.prepare('DELETE FROM entity_held_forms WHERE entity_id = ?');
    this.dropTopics = db.prepare('DELETE FROM entity_command_topics WHERE entity_id = ?');
    // A device's entities are `<device id>.<key>` (and `<device id>.<key>#<part>`): by prefix, with no LIKE (`_` is a wildcard there).
    this.deviceRows = db.prepare('SELECT entity_id FROM entity_names WHERE substr(entity_id, 1, ?) = ?');
    this.dropDeviceTopics = db.prepare('DELETE FROM entity_command_topics WHERE substr(entity_id, 1, ?) = ?');
    this.dropDeviceReads = db.prepare('DELETE FROM entity_state_topics WHERE substr(entity_id, 1, ?) = ?');
    this.dropReads = db.prepare('DELETE FROM entity_state_topics WHERE entity_id = ?');
    this.addRead = db.prepare('INSERT INTO entity_state_topics (entity_id, topic) VALUES (?, ?) ON CONFLICT DO NOTHING');
    this.dropDeviceNames = db.prepare('DELETE FROM entity_names WHERE substr(entity_id, 1, ?) = ?');
    this.dropDeviceHeld = db.prepare('DELETE FROM entity_held_forms WHERE substr(entity_id, 1, ?) = ?');
    // One entity's rows: its id, and `<entity id>#<part>` (by prefix, with no LIKE).
    const oneEntity = 'WHERE entity_id = ? OR substr(entity_id, 1, ?) = ?';
    this.entityRows = db.prepare(`SELECT entity_id FROM entity_names ${oneEntity}`);
    this.dropEntityRows = ['entity_command_topics', 'entity_state_topics', 'entity_held_forms', 'entity_names'].map((t) =>
      db.prepare(`DELETE FROM ${t} ${oneEntity}`),
    );
    this.addTopic = db.prepare('INSERT INTO entity_command_topics (entity_id, topic) VALUES (?, ?) ON CONFLICT DO NOTHING');
    this.insert = db.prepare('INSERT INTO entity_names (entity_id, first_seen, last_seen) VALUES (?, ?, ?) ON CONFLICT (entity_id) DO NOTHING');
    this.byId = db.prepare('SELECT seq FROM entity_names WHERE entity_id = ?');
    this.setName = db.prepare('UPDATE entity_names SET tool_name = ?, tool_base = ? WHERE entity_id = ?');
    this.nameRow = db.prepare('SELECT entity_id, tool_base FROM entity_names WHERE tool_name = ?');
    this.keyRow = db.prepare('SELECT tool_name, tool_base FROM entity_names WHERE entity_id = ? AND tool_name IS NOT NULL');
  }

  /** Forget what has not been seen for `days`, and the longest unseen beyond `max`. */
  private forget({ days, max }: RememberLimits): void {
    try {
      const before = new Date(Date.now() - days * 86_400_000).toISOString();
      const old = this.db.prepare('DELETE FROM entity_names WHERE coalesce(last_seen, first_seen) < ?').run(before).changes;
      const over = this.db
        .prepare(
          'DELETE FROM entity_names WHERE seq IN (SELECT seq FROM entity_names ORDER BY coalesce(last_seen, first_seen) DESC, seq DESC LIMIT -1 OFFSET ?)',
        )
        .run(max).changes;
      if (old || over)
        this.log?.info({ forgotten: old + over, days, max }, `forgot ${old + over} entities not seen for ${days} days or beyond the ${max} remembered`);
    } catch (err) {
      this.notStored(err);
    }
  }

  protected override storeTopics(changed: ReadonlyArray<readonly [string, readonly string[]]>): void {
    // Not stored (read-only, locked, or an entity whose name row could not be written): gated for this run.
    this.writeTopics(this.dropTopics, this.addTopic, changed);
    super.storeTopics(changed);
  }

  protected override storeStateTopics(changed: ReadonlyArray<readonly [string, readonly string[]]>): void {
    // Not stored: held for this run only.
    this.writeTopics(this.dropReads, this.addRead, changed);
    super.storeStateTopics(changed);
  }

  /** Each entity's topics replaced in one of the topic tables (command or state), in one transaction. */
  private writeTopics(
    drop: { run(id: string): unknown },
    add: { run(id: string, topic: string): unknown },
    changed: ReadonlyArray<readonly [string, readonly string[]]>,
  ): void {
    try {
      this.db.transaction(() => {
        for (const [id, topics] of changed) {
          drop.run(id);
          for (const t of topics) add.run(id, t);
        }
      })();
    } catch (err) {
      this.notStored(err);
    }
  }

  protected override storeHeld(changed: ReadonlyArray<readonly [string, HeldForm | undefined]>): void {
    try {
      this.db.transaction(() => {
        const at = new Date().toISOString();
        for (const [id, form] of changed) {
          if (!form) {
            this.dropHeld.run(id);
            continue;
          }
          this.insert.run(id, at, at);
          this.setHeld.run(id, JSON.stringify(form));
        }
      })();
    } catch (err) {
      // Not stored: held for this run only.
      this.notStored(err);
    }
    super.storeHeld(changed);
  }

  override forgetEntities(entityIds: readonly string[]): string[] {
    let stored: string[] = [];
    try {
      stored = this.db.transaction(() => {
        const out: string[] = [];
        for (const id of entityIds) {
          const part = `${id}#`;
          const rows = this.entityRows.all(id, part.length, part) as Array<{ entity_id: string }>;
          for (const stmt of this.dropEntityRows) stmt.run(id, part.length, part);
          out.push(...rows.map((r) => r.entity_id));
        }
        return out;
      })();
    } catch (err) {
      // Not forgotten in the database: a restart would remember it again. Said, and forgotten for this run.
      this.notStored(err);
    }
    const inMemory = super.forgetEntities(entityIds);
    return [...new Set([...inMemory, ...stored.map((k) => k.split('#', 1)[0]!)])].sort();
  }

  override forgetDevice(deviceId: string): string[] {
    const prefix = `${deviceId}.`;
    let stored: string[] = [];
    try {
      stored = this.db.transaction(() => {
        const rows = this.deviceRows.all(prefix.length, prefix) as Array<{ entity_id: string }>;
        this.dropDeviceTopics.run(prefix.length, prefix);
        this.dropDeviceReads.run(prefix.length, prefix);
        this.dropDeviceHeld.run(prefix.length, prefix);
        this.dropDeviceNames.run(prefix.length, prefix);
        return rows.map((r) => r.entity_id);
      })();
    } catch (err) {
      // Not forgotten in the database: a restart would remember it again. Said, and forgotten for this run.
      this.notStored(err);
    }
    const inMemory = super.forgetDevice(deviceId);
    return [...new Set([...inMemory, ...stored.map((k) => k.split('#', 1)[0]!)])].sort();
  }

  override seen(ids: readonly string[]): void {
    const now = Date.now();
    if (now - this.lastTouch < SEEN_EVERY_MS) return;
    this.lastTouch = now;
    const at = new Date(now).toISOString();
    try {
      this.db.transaction(() => {
        for (const id of ids) this.touch.run(at, id, id);
      })();
    } catch (err) {
      this.notStored(err);
    }
  }

  override firstSeen(ids: readonly string[]): Map<string, number> {
    if (ids.every((id) => this.seq.has(id))) return super.firstSeen(ids);
    try {
      // One transaction for a burst of newcomers (a thousand discovered at start).
      return this.db.transaction(() => super.firstSeen(ids))();
    } catch (err) {
      this.notStored(err);
      return super.firstSeen(ids);
    }
  }

  protected override record(id: string): number {
    try {
      const at = new Date().toISOString();
      this.insert.run(id, at, at);
      // Another process may have recorded it first: its number stands.
      const row = this.byId.get(id) as { seq: number } | undefined;
      if (row) return row.seq;
    } catch (err) {
      this.notStored(err);
    }
    // Not stored (a read-only or locked database): ranked after every stored one, for this run.
    return Number.MAX_SAFE_INTEGER / 2 + this.seq.size;
  }

  override nameOf(key: string): RememberedName | undefined {
    const known = super.nameOf(key);
    if (known) return known;
    // Another process (the daemon, a `hearth call`) may have named it since we read the table.
    const row = this.trouble.read(() => this.keyRow.get(key)) as { tool_name: string; tool_base: string | null } | undefined;
    if (!row) return undefined;
    super.keep(key, row.tool_name, row.tool_base ?? '');
    return super.nameOf(key);
  }

  override holderOf(name: string): string | undefined {
    const held = super.holderOf(name);
    if (held !== undefined) return held;
    const row = this.trouble.read(() => this.nameRow.get(name)) as { entity_id: string; tool_base: string | null } | undefined;
    if (row) super.keep(row.entity_id, name, row.tool_base ?? '');
    return row?.entity_id;
  }

  protected override keep(key: string, name: string, base: string): void {
    try {
      this.db.transaction(() => {
        const at = new Date().toISOString();
        this.insert.run(key, at, at);
        this.setName.run(name, base, key);
      })();
    } catch (err) {
      // A name another process gave to another key meanwhile (UNIQUE), or a read-only database.
      if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') throw new NameTakenError(name);
      this.notStored(err);
    }
    super.keep(key, name, base);
  }

  /** Said once per run: the run goes on with what it remembers in memory. */
  private notStored(err: unknown): void {
    this.trouble.say(err);
  }
}

/** Each entity's topics in one of the topic tables (command or state), in topic order. */
function topicsIn(db: Db, table: 'entity_command_topics' | 'entity_state_topics'): Map<string, string[]> {
  const topics = new Map<string, string[]>();
  for (const row of db.prepare(`SELECT entity_id, topic FROM ${table} ORDER BY entity_id, topic`).all() as Array<{ entity_id: string; topic: string }>) {
    let list = topics.get(row.entity_id);
    if (!list) topics.set(row.entity_id, (list = []));
    list.push(row.topic);
  }
  return topics;
}

/** The same topics, in any order (none remembered and none now are the same: nothing to write for a sensor). */
function sameTopics(a: readonly string[] | undefined, b: readonly string[]): boolean {
  if (!a) return b.length === 0;
  if (a.length !== b.length) return false;
  if (a.every((t, i) => t === b[i])) return true;
  const set = new Set(a);
  return b.every((t) => set.has(t));
}

/** Another process gave this name to another entity a moment ago: pick another. */
export class NameTakenError extends Error {
  constructor(readonly toolName: string) {
    super(`tool name ${toolName} is already held by another entity`);
  }
}
