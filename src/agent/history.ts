// Conversation threads in SQLite, so a session can be resumed after a restart.
import type { Db } from '../db/database.js';
import type { ChatMessage } from './provider.js';

export interface SessionRecord {
  id: string;
  principal: string;
  model: string;
  systemPrompt: string | null;
  createdAt: string;
  updatedAt: string;
  turns: number;
}

export class HistoryStore {
  private readonly insertSession;
  private readonly touch;
  private readonly insertMessage;
  private readonly messages;
  private readonly session;
  private readonly list;
  private readonly maxSeq;
  private readonly claimTx: { immediate(id: string, principal: string): string };

  constructor(private readonly db: Db) {
    this.insertSession = db.prepare(
      'INSERT OR IGNORE INTO sessions (id, principal, model, system_prompt, created_at, updated_at, turns) VALUES (?, ?, ?, ?, ?, ?, 0)',
    );
    this.touch = db.prepare('UPDATE sessions SET updated_at = ?, turns = turns + 1, model = ? WHERE id = ?');
    this.insertMessage = db.prepare('INSERT INTO session_messages (session_id, seq, message) VALUES (?, ?, ?)');
    this.messages = db.prepare('SELECT message FROM session_messages WHERE session_id = ? ORDER BY seq');
    this.session = db.prepare('SELECT * FROM sessions WHERE id = ?');
    this.list = db.prepare('SELECT * FROM sessions WHERE principal = ? ORDER BY updated_at DESC LIMIT ?');
    this.maxSeq = db.prepare('SELECT COALESCE(MAX(seq), 0) AS n FROM session_messages WHERE session_id = ?');
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

  create(id: string, principal: string, model: string, systemPrompt: string | null): void {
    const now = new Date().toISOString();
    this.insertSession.run(id, principal, model, systemPrompt, now, now);
  }

  get(id: string): SessionRecord | undefined {
    const r = this.session.get(id) as Record<string, unknown> | undefined;
    return r ? toRecord(r) : undefined;
  }

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
}

function toRecord(r: Record<string, unknown>): SessionRecord {
  return {
    id: String(r.id),
    principal: String(r.principal),
    model: String(r.model),
    systemPrompt: (r.system_prompt as string | null) ?? null,
    createdAt: String(r.created_at),
    updatedAt: String(r.updated_at),
    turns: Number(r.turns),
  };
}
