// The agent surface, mirroring the Jan kit's session API and event names
// (snake_case fields, as on the kit's wire), so a kit client and Hearth's
// front doors read the same events.
import type { HostTool, Principal, ToolCall, ToolResultObject } from '../tools/types.js';
import type { FunctionSpec, Usage } from './provider.js';

export type Permissions = 'jan' | 'host';
export type PermissionDecision = 'allow_once' | 'allow_always' | 'deny';
export type StopReason = 'completed' | 'interrupted' | 'error';

export type AgentEvent =
  | { type: 'token'; text: string }
  | { type: 'reasoning'; text: string }
  | { type: 'step'; index: number; max: number }
  | { type: 'tool_call_started'; id: string; name: string }
  | { type: 'tool_call_args_delta'; id: string; delta: string }
  | { type: 'tool_call'; id: string; name: string; args: Record<string, unknown> | null }
  | { type: 'tool_request'; request_id: string; tool_name: string; args: Record<string, unknown>; run_id: string | null }
  | { type: 'tool_request_cancelled'; request_id: string; reason: 'aborted' | 'interrupted' | 'client_gone' }
  | { type: 'tool_result'; id: string; content: string; is_error: boolean }
  | { type: 'tool_details'; id: string; details: Record<string, unknown> }
  | {
      type: 'permission_request';
      request_id: string;
      /** The host__ name, as the kit sends it. */
      tool_name: string;
      capability: 'read' | 'actuator' | null;
      prompt_kind: 'tool';
      offers_always: boolean;
      /** Hearth adds the exact arguments, so a person sees what they approve. */
      args: Record<string, unknown>;
    }
  | { type: 'notice'; text: string }
  | { type: 'turn_usage'; usage: Usage }
  | { type: 'subagent_start'; run_id: string; name: string; task?: string }
  | { type: 'subagent_queued'; run_id: string; name: string; task?: string; waiting: number }
  | { type: 'subagent_end'; run_id: string; name: string; error?: string }
  /** A child's non-terminal event (its tool_request, tool_request_cancelled and permission_request come unwrapped, with its run id). */
  | { type: 'subagent'; run_id: string; name: string; event: AgentEvent }
  | { type: 'done'; stop_reason: string; usage?: Usage }
  | { type: 'error'; code: string; message: string };

export interface TurnResult {
  stopReason: StopReason;
  error?: string;
}

export interface Turn extends AsyncIterable<AgentEvent> {
  readonly id: string;
  result(): Promise<TurnResult>;
  interrupt(): void;
}

export interface SessionOptions {
  tools?: HostTool[];
  permissions?: Permissions;
  /** Replaces the engine's whole system prompt, byte for byte. */
  systemPrompt?: string;
  /** Neither the thread nor memory is saved. */
  ephemeral?: boolean;
  /** The engine's own tools. Hearth's builtin engine has none but the subagent tools, so this only sets `subagents`' default. Default true. */
  builtins?: boolean;
  /** Offer dispatch_subagent, list_subagents, message_subagent and stop_subagent. Default: the `builtins` value. */
  subagents?: boolean;
  model?: string;
  /** Who the session acts for; every tool call carries it. */
  principal?: Principal;
  /** Resume a saved session by id. */
  id?: string;
  /** The area the session speaks from (a kitchen satellite): "turn on the lights in here". */
  area?: string;
  /**
   * What the front door that opens the session keeps with it (JSON; the rpc
   * server: the client's declared tools). Saved with a non-ephemeral session
   * and given back on resume and fork.
   */
  hostState?: unknown;
}

/** A saved session as a list shows it. */
export interface SessionInfo {
  id: string;
  model: string;
  /** Turns taken since it started (or was last reset). */
  turns: number;
  updatedAt?: string;
}

/** What reopening or forking a session needs: who asks, and the tools it gets. */
export interface ReopenOptions {
  principal?: Principal;
  tools?: HostTool[];
  /** For a fork: the front door's state of the new session (default: the source's). */
  hostState?: unknown;
  /** The area the reopened session speaks from (not saved with it: a satellite says it each time). */
  area?: string;
}

export interface AgentSession {
  readonly id: string;
  readonly model: string;
  readonly principal: Principal;
  /** Names as advertised: `host__<name>`. */
  readonly tools: string[];
  readonly toolSpecs: FunctionSpec[];
  /** Turns taken since it started (or was last reset). */
  readonly turns: number;
  /** The front door's state (see SessionOptions.hostState). */
  readonly hostState?: unknown;
  /** Replace the front door's state (saved with a non-ephemeral session). */
  setHostState(state: unknown): void;
  prompt(text: string): Promise<Turn>;
  /** Guidance for the model's next request within the running turn; NoActiveTurnError when none runs. */
  steer(text: string): Promise<void>;
  /** Use this model from the next turn on (a running turn keeps its own); answers the model now in use. */
  setModel(model: string): Promise<string>;
  /** Forget the conversation, keep the tools and options; TurnActiveError while a turn runs. */
  reset(): Promise<void>;
  /** Stop the running turn, leave the lists and take no new turns (ArchivedSessionError) — for good. */
  archive(): Promise<void>;
  /**
   * Answer a permission_request. `by`: who answered, when the door knows it is
   * not the session's principal. An allow_once satisfies a confirm rule only
   * when that principal (default: the session's) may grant approvals.
   */
  respondPermission(requestId: string, decision: PermissionDecision, by?: Principal): void;
  setTools(tools: HostTool[]): void;
  on(event: 'event', fn: (event: AgentEvent, turnId: string) => void): unknown;
  off(event: 'event', fn: (event: AgentEvent, turnId: string) => void): unknown;
  close(): Promise<void>;
}

export interface EngineLimits {
  mime_types: string[];
  max_image_bytes: number;
  max_message_image_bytes: number;
  max_images: number;
}

export interface Engine {
  readonly name: string;
  readonly limits: EngineLimits;
  createSession(options: SessionOptions): Promise<AgentSession>;
  /** The principal's saved sessions (not ephemeral, not archived), most recently used first. */
  listSessions(principal?: Principal): Promise<SessionInfo[]>;
  /** Reopen a saved session with its thread: undefined when the principal has none by that id; ArchivedSessionError when archived. */
  resumeSession(id: string, options?: ReopenOptions): Promise<AgentSession | undefined>;
  /** A new session with a copy of this one's thread, options and front-door state (ephemeral when the source is). */
  forkSession(source: AgentSession, options?: ReopenOptions): Promise<AgentSession>;
  close(): Promise<void>;
  /** Up to three things to say in this session, made of the home (none when the engine's model does not know it). */
  examples?(session: AgentSession): string[];
}

/** A second prompt while a turn runs: retryable, as the kit's -32001. */
export class TurnActiveError extends Error {
  readonly code = 'turn_active';
  readonly retryable = true;
  constructor() {
    super('a turn is already running in this session; wait for it or interrupt it');
    this.name = 'TurnActiveError';
  }
}

export class NotPendingError extends Error {
  readonly code = 'not_pending';
  constructor(id: string) {
    super(`no pending request ${id}`);
    this.name = 'NotPendingError';
  }
}

/** A steer with no turn running to take it. */
export class NoActiveTurnError extends Error {
  readonly code = 'no_active_turn';
  constructor() {
    super('no turn is running in this session: a steer goes to the running turn; start one with a prompt');
    this.name = 'NoActiveTurnError';
  }
}

/** The session was archived: it takes no new turns. */
export class ArchivedSessionError extends Error {
  readonly code = 'archived_session';
  constructor(id: string) {
    super(`session ${JSON.stringify(id)} is archived: it takes no new turns (start a new session)`);
    this.name = 'ArchivedSessionError';
  }
}

/**
 * A host tool call an engine refused before its handler (unknown or not offered, arguments no JSON object or not
 * fitting the schema): the assembly records it as every door does (ToolSet.refuse); the result is what the model reads.
 */
export type RefuseCall = (name: string, args: unknown, principal: Principal, extra: Partial<ToolCall>, text: string) => ToolResultObject;
