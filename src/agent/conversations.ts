// A conversation turn for front doors that answer in words and nothing else
// (the OpenAI-compatible endpoint, Wyoming voice satellites): the person's
// text runs as a turn of an agent session through the same SessionManager as
// every other door (so the same tools, policy, approvals and audit), and the
// answer comes back as text for a person (spoken.ts), with what the turn did
// beside it.
//
// A conversation is keyed by the caller's own key (a chat id, a Home
// Assistant conversation id) within its principal: the same key reopens the
// same saved session, another principal's same key is another session. Its
// session id is in a namespace no other door may open (CONVERSATION_ID_PREFIX,
// refused by SessionManager.open), so no principal can claim or block another
// principal's conversation by guessing its id. Without a key the turn runs in
// a fresh ephemeral session. Either way the session is closed once no turn of
// this class uses it: a keyed one is saved and reopened from the database by
// its next turn, so conversations that never come back (a voice pipeline
// makes a new id for each exchange) do not pile up in memory. A message that
// arrives while the conversation's turn runs is refused (TurnActiveError) and
// leaves that turn alone.
import type { Hearth } from '../hearth.js';
import type { Principal } from '../tools/types.js';
import { NOT_UNDERSTOOD } from './provider.js';
import { scopedSessionId, type SessionManager } from './sessions.js';
import { personAnswer } from './spoken.js';
import { TurnSummary } from './turn-summary.js';
import type { AgentEvent, AgentSession, Turn, TurnResult } from './types.js';

export interface ConversationTurn {
  principal: Principal;
  /** The caller's conversation key; undefined: a fresh ephemeral session. */
  key?: string;
  text: string;
  /** Each event of the turn as it happens. */
  onEvent?(event: AgentEvent): void;
  /**
   * The answer for a person, piece by piece as the turn goes (streaming doors):
   * the model's words as they come, until the turn holds a call for approval or
   * reads a camera; then the rest once the turn is over, in Hearth's words.
   */
  onText?(text: string): void;
  /** Aborted: the turn is interrupted (the client went away). */
  signal?: AbortSignal;
}

export interface ConversationAnswer {
  /** The answer for a person (spoken.ts): no rule syntax, approval ids or CLI lines. */
  text: string;
  /** false: the model said it did not understand (the offline model), so another agent may try. */
  understood: boolean;
  summary: TurnSummary;
  result: TurnResult;
  sessionId: string;
  ephemeral: boolean;
}

/** The session id of a keyed conversation: stable per principal and key, never another principal's. */
export function conversationSessionId(principalId: string, key: string): string {
  return scopedSessionId('conversation', principalId, key);
}

export class Conversations {
  /** Turns of this class using each open session: the last one out closes it. */
  private readonly users = new Map<string, number>();

  constructor(private readonly hearth: Hearth) {}

  private agent(): Promise<SessionManager> {
    return this.hearth.agent();
  }

  /** Open (or find) the session of a conversation. */
  async session(principal: Principal, key?: string): Promise<{ session: AgentSession; ephemeral: boolean }> {
    const agent = await this.agent();
    const area = principal.area;
    if (key === undefined) {
      // An HTTP or voice client answers approvals elsewhere (hearth approve, the page): the session does not ask.
      return { session: await agent.open({ principal, permissions: 'host', ephemeral: true, ...(area ? { area } : {}) }), ephemeral: true };
    }
    const id = conversationSessionId(principal.id, key);
    return { session: await agent.open({ principal, permissions: 'host', id, namespace: 'conversation', ...(area ? { area } : {}) }), ephemeral: false };
  }

  private enter(id: string): void {
    this.users.set(id, (this.users.get(id) ?? 0) + 1);
  }

  /** This turn is done with the session; the last one out closes it (never under another caller's running turn). */
  private async leave(agent: SessionManager, id: string): Promise<void> {
    const left = (this.users.get(id) ?? 1) - 1;
    if (left > 0) {
      this.users.set(id, left);
      return;
    }
    this.users.delete(id);
    await agent.close(id);
  }

  /** Start the turn, reopening a session the conversation's previous turn closed just now. */
  private async start(agent: SessionManager, request: ConversationTurn): Promise<{ session: AgentSession; ephemeral: boolean; turn: Turn }> {
    for (let attempt = 0; ; attempt++) {
      const { session, ephemeral } = await this.session(request.principal, request.key);
      this.enter(session.id);
      try {
        return { session, ephemeral, turn: await agent.prompt(session, request.text) };
      } catch (err) {
        await this.leave(agent, session.id);
        if (attempt === 0 && /the session is closed/.test((err as Error).message)) continue;
        throw err;
      }
    }
  }

  /** Run one turn and answer in words. Throws TurnActiveError while the conversation's last turn still runs. */
  async turn(request: ConversationTurn): Promise<ConversationAnswer> {
    const agent = await this.agent();
    const { session, ephemeral, turn } = await this.start(agent, request);
    try {
      const onAbort = () => turn.interrupt();
      request.signal?.addEventListener('abort', onAbort, { once: true });
      if (request.signal?.aborted) turn.interrupt();
      const summary = new TurnSummary();
      let understood = true;
      // Tokens go to a person live until the turn does something Hearth says in its own words.
      let live = true;
      let sent = '';
      let held = '';
      try {
        for await (const event of turn) {
          summary.add(event);
          request.onEvent?.(event);
          if (event.type === 'done' && event.stop_reason === NOT_UNDERSTOOD) understood = false;
          if (event.type === 'tool_details' && typeof (event.details as { approvalId?: unknown }).approvalId === 'string') live = false;
          if (event.type === 'tool_result' && !event.is_error && /^Latest frame from the camera /.test(event.content)) live = false;
          if (event.type === 'step') held = '';
          if (event.type === 'token' && event.text) {
            if (live && request.onText) {
              sent += event.text;
              request.onText(event.text);
            } else held += event.text;
          }
        }
      } finally {
        request.signal?.removeEventListener('abort', onAbort);
      }
      const result = await turn.result();
      const text = personAnswer(this.hearth, summary.text, summary.toolCalls, summary.approvalIds);
      if (request.onText) {
        const rest = live ? (sent.trim() ? '' : text) : personAnswer(this.hearth, held.trim(), summary.toolCalls, summary.approvalIds);
        if (rest) request.onText(sent.trim() ? ` ${rest}` : rest);
      }
      return { text, understood, summary, result, sessionId: session.id, ephemeral };
    } finally {
      await this.leave(agent, session.id);
    }
  }
}
