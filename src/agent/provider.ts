// What the builtin engine asks of a model: one streamed round of a chat.
// Implementations: an OpenAI-compatible HTTP provider (Jan Desktop, Ollama,
// llama.cpp, LM Studio) and the offline intent model.

export type ContentPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

export interface ToolCallRequest {
  id: string;
  /** As the model named it: `host__<tool>`. */
  name: string;
  /** Raw JSON text as the model produced it (`""` means `{}`). */
  arguments: string;
}

export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | ContentPart[] }
  | { role: 'assistant'; content: string | null; tool_calls?: ToolCallRequest[] }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface FunctionSpec {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export interface ProviderRequest {
  model: string;
  messages: ChatMessage[];
  tools: FunctionSpec[];
  signal: AbortSignal;
  /**
   * Where the speaker is (a voice satellite's or wall tablet's area): "in here" means it. `readable`: the
   * entities the session's principal may read (a model that knows the home itself must not name the rest).
   */
  context?: { area?: string; readable?: (entityId: string) => boolean };
}

export type ProviderEvent =
  | { type: 'token'; text: string }
  | { type: 'reasoning'; text: string }
  | { type: 'tool_call_started'; id: string; name: string }
  | { type: 'tool_call_args_delta'; id: string; delta: string }
  /**
   * `together`: the calls are one request of a person ("unlock all the doors"): the engine makes all of them or
   * none (a call the policy would refuse or hold is made first; the rest follow only if it went through).
   */
  | { type: 'done'; finishReason: string; toolCalls: ToolCallRequest[]; usage?: Usage; together?: boolean };

/**
 * The `finishReason` of a round in which the model says it did not understand
 * the request (the offline intent model): a door whose client can ask another
 * agent (Wyoming's not-handled) tells it so.
 */
export const NOT_UNDERSTOOD = 'not_understood';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cached_tokens?: number;
}

export class ProviderError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}

export interface Provider {
  readonly name: string;
  /** The model used when a session names none. */
  readonly defaultModel: string;
  /** Does the model take images? (camera results are sent only then) */
  readonly vision: boolean;
  /** One streamed round. Ends with exactly one `done` event, or throws a ProviderError. */
  stream(request: ProviderRequest): AsyncIterable<ProviderEvent>;
  /**
   * Up to three things a person could say to this home with these tools, made of its own devices (what a chat's
   * `help` shows); only entities `readable` allows. A provider that does not know the home has none.
   */
  examples?(toolNames: string[], readable?: (entityId: string) => boolean): string[];
}
