// Conversation threads in SQLite, so a session can be resumed after a restart
// (with its options and its front door's state), forked, reset or archived.
import type { Db } from '../db/database.js';
import type { ChatMessage } from './provider.js';

/** Engine options a saved session is reopened with. */
export interface SavedOptions {
  permissions?: 'jan' | 'host';
  builtins?: boolean;
  subagents?: boolean;
}

export interface SessionRecord {
  id: string;
  principal: string;
  model: string;
  systemPrompt: string | null;
  createdAt: string;
  updatedAt: string;
  turns: number;
  options: SavedOptions;
  /** What the front door that opened it keeps with it (JSON), or null. */
  hostState: unknown;
  forkedFrom: string | null;
  archivedAt: string | null;
}

export interface NewSession {
  id: string;
  principal: string;
  model: string;
  systemPrompt: string | null;
  options?: SavedOptions;
  hostState?: unknown;
  forkedFrom?: string;
  /** A fork starts with its source's turns and messages. */
  turns?: number;
  messages?: readonly ChatMessage[];
}

export interface SavedSessionLimits {
  /** Most saved sessions one principal keeps; the least recently used go first. */
  perPrincipal: number;
  /** A saved session nobody used for this many days is forgotten. */
  keepDays: number;
}

/** A guest cannot fill the database with threads: 2,000 saved sessions of 50 KB prompts were 128 MB. */
export const SAVED_SESSION_LIMITS: SavedSessionLimits = { perPrincipal: 50, keepDays: 90 };

export class HistoryStore {
  private readonly insertSession;
  private readonly touch;
  private readonly insertMessage;
  private readonly messages;
  private readonly session;
  private readonly list;
  private readonly maxSeq;
  private readonly deleteMessages;
  private readonly deleteSession;
  private readonly clearTurns;
  private readonly updateModel;
  private readonly markArchived;
  private readonly updateHostState;
  private readonly claimTx: { immediate(id: string, principal: string): string };

  private readonly pruneOldest;
  private readonly expire;

  constructor(
    private readonly db: Db,
    private readonly limits: SavedSessionLimits = SAVED_SESSION_LIMITS,
  ) {
    this.insertSession = db.prepare(
      `INSERT OR IGNORE INTO sessions (id, principal, model, system_prompt, created_at, updated_at, turns, options, host_state, forked_from)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.touch = db.prepare('UPDATE sessions SET updated_at = ?, turns = turns + 1, model = ? WHERE id = ?');
    this.insertMessage = db.prepare('INSERT INTO session_messages (session_id, seq, message) VALUES (?, ?, ?)');
    this.messages = db.prepare('SELECT message FROM session_messages WHERE session_id = ? ORDER BY seq');
    this.session = db.prepare('SELECT * FROM sessions WHERE id = ?');
    this.list = db.prepare('SELECT * FROM sessions WHERE principal = ? AND archived_at IS NULL ORDER BY updated_at DESC LIMIT ?');
    this.maxSeq = db.prepare('SELECT COALESCE(MAX(seq), 0) AS n FROM session_messages WHERE session_id = ?');
    this.deleteMessages = db.prepare('DELETE FROM session_messages WHERE session_id = ?');
    this.deleteSession = db.prepare('DELETE FROM sessions WHERE id = ?');
    this.clearTurns = db.prepare('UPDATE sessions SET turns = 0, updated_at = ? WHERE id = ?');
    this.updateModel = db.prepare('UPDATE sessions SET model = ?, updated_at = ? WHERE id = ?');
    this.updateHostState = db.prepare('UPDATE sessions SET host_state = ? WHERE id = ?');
    // Sessions and their messages go together (the messages first: the table's foreign key may be off).
    this.pruneOldest = db.prepare('SELECT id FROM sessions WHERE principal = ? ORDER BY updated_at DESC, id DESC LIMIT -1 OFFSET ?');
    this.expire = db.prepare('SELECT id FROM sessions WHERE updated_at < ?');
    this.markArchived = db.prepare('UPDATE sessions SET archived_at = ?, updated_at = ? WHERE id = ? AND archived_at IS NULL');
    const claim = db.prepare('INSERT OR IGNORE INTO session_claims (id, principal) VALUES (?, ?)');
    const claimant = db.prepare('SELECT principal FROM session_claims WHERE id = ?').pluck();
    const saved = db.prepare('SELECT principal FROM sessions WHERE id = ?').pluck();
    this.claimTx = db.transaction((id: string, principal: string): string => {
      // A saved thread's principal first (sessions older than the claims table), then the claim.
      const owner = (saved.get(id) as string | undefined) ?? (claimant.get(id) as string | undefined);
      if (owner !== undefined) return owner;
      claim.run(id, principal);
      return principal;
    });
  }

  /**
   * Claim a session id for a principal, ephemeral sessions too; returns the
   * principal the id belongs to (another one's: the caller must refuse).
   * An id once used stays with its principal, so nobody can take it over.
   */
  claim(id: string, principal: string): string {
    return this.claimTx.immediate(id, principal);
  }

  /** Save a new session (a fork with its source's messages), in one transaction. Nothing happens when the id exists. */
  create(s: NewSession): void {
    const now = new Date().toISOString();
    this.db.transaction(() => {
      const added = this.insertSession.run(
        s.id,
        s.principal,
        s.model,
        s.systemPrompt,
        now,
        now,
        s.turns ?? 0,
        JSON.stringify(s.options ?? {}),
        s.hostState === undefined ? null : JSON.stringify(s.hostState),
        s.forkedFrom ?? null,
      );
      if (!added.changes) return;
      let seq = 0;
      for (const m of s.messages ?? []) this.insertMessage.run(s.id, ++seq, JSON.stringify(m));
      // One principal keeps at most `perPrincipal` saved sessions: the least recently used go.
      this.drop(this.pruneOldest.pluck().all(s.principal, this.limits.perPrincipal) as string[]);
    })();
  }

  /** Forget sessions nobody used for `keepDays` (run at start). Returns how many went. */
  expireOld(now = Date.now()): number {
    const before = new Date(now - this.limits.keepDays * 86_400_000).toISOString();
    return this.db.transaction(() => this.drop(this.expire.pluck().all(before) as string[]))();
  }

  private drop(ids: string[]): number {
    for (const id of ids) {
      this.deleteMessages.run(id);
      this.deleteSession.run(id);
    }
    return ids.length;
  }

  get(id: string): SessionRecord | undefined {
    const r = this.session.get(id) as Record<string, unknown> | undefined;
    return r ? toRecord(r) : undefined;
  }

  /** A principal's sessions that are not archived, most recently used first. */
  forPrincipal(principal: string, limit = 20): SessionRecord[] {
    return (this.list.all(principal, limit) as Record<string, unknown>[]).map(toRecord);
  }

  load(id: string): ChatMessage[] {
    return (this.messages.all(id) as Array<{ message: string }>).map((r) => JSON.parse(r.message) as ChatMessage);
  }

  /** Append a finished turn's messages in one transaction. */
  append(id: string, model: string, messages: ChatMessage[]): void {
    this.db.transaction(() => {
      let seq = (this.maxSeq.get(id) as { n: number }).n;
      for (const m of messages) this.insertMessage.run(id, ++seq, JSON.stringify(m));
      this.touch.run(new Date().toISOString(), model, id);
    })();
  }

  /** Forget the thread (the session and its options stay). */
  clear(id: string): void {
    this.db.transaction(() => {
      this.deleteMessages.run(id);
      this.clearTurns.run(new Date().toISOString(), id);
    })();
  }

  setModel(id: string, model: string): void {
    this.updateModel.run(model, new Date().toISOString(), id);
  }

  setHostState(id: string, state: unknown): void {
    this.updateHostState.run(state === undefined ? null : JSON.stringify(state), id);
  }

  archive(id: string): void {
    const now = new Date().toISOString();
    this.markArchived.run(now, now, id);
  }
}

function parseJson(text: unknown, fallback: unknown): unknown {
  if (typeof text !== 'string') return fallback;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return fallback;
  }
}

function toRecord(r: Record<string, unknown>): SessionRecord {
  const options = parseJson(r.options, {});
  return {
    id: String(r.id),
    principal: String(r.principal),
    model: String(r.model),
    systemPrompt: (r.system_prompt as string | null) ?? null,
    createdAt: String(r.created_at),
    updatedAt: String(r.updated_at),
    turns: Number(r.turns),
    options: options && typeof options === 'object' && !Array.isArray(options) ? (options as SavedOptions) : {},
    hostState: parseJson(r.host_state, null),
    forkedFrom: (r.forked_from as string | null) ?? null,
    archivedAt: (r.archived_at as string | null) ?? null,
  };
}
