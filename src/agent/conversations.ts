// A conversation turn for front doors that answer in words and nothing else
// (the OpenAI-compatible endpoint, Wyoming voice satellites): the person's
// text runs as a turn of an agent session through the same SessionManager as
// every other door (so the same tools, policy, approvals and audit), and the
// answer comes back as text, with what the turn did beside it.
//
// A conversation is keyed by the caller's own key (a chat id, a Home
// Assistant conversation id) within its principal: the same key reopens the
// same saved session, another principal's same key is another session.
// Without a key the turn runs in a fresh ephemeral session. Either way the
// session is closed after its turn: a keyed one is saved and reopened from the
// database by its next turn, so conversations that never come back (a voice
// pipeline makes a new id for each exchange) do not pile up in memory.
import { createHash } from 'node:crypto';
import type { Hearth } from '../hearth.js';
import type { Principal } from '../tools/types.js';
import type { SessionManager } from './sessions.js';
import { TurnSummary } from './turn-summary.js';
import type { AgentEvent, AgentSession, TurnResult } from './types.js';

export interface ConversationTurn {
  principal: Principal;
  /** The caller's conversation key; undefined: a fresh ephemeral session. */
  key?: string;
  text: string;
  /** Each event of the turn as it happens (streaming front doors). */
  onEvent?(event: AgentEvent): void;
  /** Aborted: the turn is interrupted (the client went away). */
  signal?: AbortSignal;
}

export interface ConversationAnswer {
  /** The answer, with a sentence on any held approval: who must approve and how. */
  text: string;
  /** The sentence added for held approvals ('' when none), so a stream can send it after the tokens. */
  approvalText: string;
  summary: TurnSummary;
  result: TurnResult;
  sessionId: string;
  ephemeral: boolean;
}

/** The session id of a keyed conversation: stable per principal and key, never another principal's. */
export function conversationSessionId(principalId: string, key: string): string {
  return `conv-${createHash('sha256').update(`${principalId}\u0000${key}`).digest('hex').slice(0, 32)}`;
}

/** `role:owner` -> "someone with the owner role"; a principal stays itself; `*` is anyone. */
function approverWords(subject: string): string {
  if (subject === '*') return 'anyone';
  if (subject.startsWith('role:')) return `someone with the ${subject.slice(5)} role`;
  return subject;
}

/**
 * Words for calls a confirm rule held: who may approve (the policy's
 * approvers for that call: owners, and whoever an approve rule names) and
 * how, and that the person asks again once it is granted. Plain words: a
 * voice satellite speaks them.
 */
export function heldApprovalText(hearth: Hearth, approvalIds: readonly string[], now = Date.now()): string {
  if (!approvalIds.length) return '';
  const who = new Set<string>();
  const parts = approvalIds.map((id) => {
    const a = hearth.approvals.get(id);
    if (!a) {
      who.add('role:owner');
      return `approval ${id}`;
    }
    const request = hearth.tools.policyRequest(a.tool, a.args, hearth.policy.principal(a.principal));
    const target = request
      ? {
          tool: request.tool,
          capability: request.capability,
          action: request.action,
          ...(request.entityId ? { entityId: request.entityId } : {}),
          ...(request.area ? { area: request.area } : {}),
          ...(request.kind ? { kind: request.kind } : {}),
          ...(request.deviceClass ? { deviceClass: request.deviceClass } : {}),
        }
      : { tool: a.tool };
    for (const s of hearth.policy.approversFor(target)) who.add(s);
    const minutes = Math.max(1, Math.round((a.expiresAt - now) / 60000));
    return `approval ${id} (${a.tool}), open for ${minutes} min`;
  });
  return (
    `This waits for a person: ${[...who].map(approverWords).join(' or ')} must grant ${parts.join(' and ')}, ` +
    `with "hearth approve <id>" or under Approvals on Hearth's web page. Once it is granted, ask me again.`
  );
}

export class Conversations {
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
    return { session: await agent.open({ principal, permissions: 'host', id, ...(area ? { area } : {}) }), ephemeral: false };
  }

  /** Run one turn and answer in words. Throws TurnActiveError while the conversation's last turn still runs. */
  async turn(request: ConversationTurn): Promise<ConversationAnswer> {
    const agent = await this.agent();
    let { session, ephemeral } = await this.session(request.principal, request.key);
    try {
      let turn;
      try {
        turn = await agent.prompt(session, request.text);
      } catch (err) {
        // The conversation's previous turn closed this session object just now: reopen it from the database.
        if (!/the session is closed/.test((err as Error).message)) throw err;
        ({ session, ephemeral } = await this.session(request.principal, request.key));
        turn = await agent.prompt(session, request.text);
      }
      const onAbort = () => turn.interrupt();
      request.signal?.addEventListener('abort', onAbort, { once: true });
      if (request.signal?.aborted) turn.interrupt();
      const summary = new TurnSummary();
      try {
        for await (const event of turn) {
          summary.add(event);
          request.onEvent?.(event);
        }
      } finally {
        request.signal?.removeEventListener('abort', onAbort);
      }
      const result = await turn.result();
      const approvalText = heldApprovalText(this.hearth, summary.approvalIds);
      const text = [summary.text, approvalText].filter(Boolean).join(' ');
      return { text, approvalText, summary, result, sessionId: session.id, ephemeral };
    } finally {
      await agent.close(session.id);
    }
  }
}
