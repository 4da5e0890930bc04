// The Chat Completions options Hearth does not act on, in one table: the ones
// it ignores (they tune how a model samples or what a provider keeps; Hearth's
// answer is a valid answer whatever they say), and the ones whose value asks for
// something Hearth cannot give (JSON output, log probabilities, audio, a forced
// tool call, web search), refused with a 400 naming the parameter, as `n` is.
// docs/voice-and-chat.md lists both (test/voice/openai-options.test.ts checks it).

/** Accepted and ignored, whatever their value. */
export const IGNORED_OPTIONS = [
  'temperature',
  'top_p',
  'frequency_penalty',
  'presence_penalty',
  'seed',
  'logit_bias',
  'reasoning_effort',
  'verbosity',
  'prediction',
  'metadata',
  'store',
  'service_tier',
  'prompt_cache_key',
  'safety_identifier',
  'tools',
  'functions',
  'parallel_tool_calls',
] as const;

interface Refusal {
  /** The values Hearth gives anyway (null and absent always pass). */
  honoured: (v: unknown) => boolean;
  /** Why any other value is refused. */
  why: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** Honoured only at the value that asks for nothing more than a plain text answer. */
export const REFUSED_OPTIONS: Record<string, Refusal> = {
  response_format: {
    honoured: (v) => isObject(v) && v.type === 'text',
    why: 'Hearth answers in plain sentences for a person and cannot promise JSON: leave response_format out, or {"type": "text"}',
  },
  logprobs: { honoured: (v) => v === false, why: 'Hearth has no token probabilities to give: leave logprobs out, or false' },
  top_logprobs: { honoured: (v) => v === 0, why: 'Hearth has no token probabilities to give: leave top_logprobs out, or 0' },
  modalities: {
    honoured: (v) => Array.isArray(v) && v.length === 1 && v[0] === 'text',
    why: 'Hearth answers in text only: leave modalities out, or ["text"]',
  },
  audio: { honoured: () => false, why: 'Hearth answers in text only (for speech, use its Wyoming service)' },
  tool_choice: {
    honoured: (v) => v === 'auto' || v === 'none',
    why: 'Hearth\'s own tools do the work and the app\'s tools are never called: tool_choice may only be "auto" or "none"',
  },
  function_call: {
    honoured: (v) => v === 'auto' || v === 'none',
    why: 'Hearth\'s own tools do the work and the app\'s functions are never called: function_call may only be "auto" or "none"',
  },
  web_search_options: { honoured: () => false, why: 'Hearth does not search the web' },
};

/** The first option in `body` Hearth cannot honour, with why; undefined when there is none. */
export function refusedOption(body: Record<string, unknown>): { param: string; value: unknown; why: string } | undefined {
  for (const [param, rule] of Object.entries(REFUSED_OPTIONS)) {
    const value = body[param];
    if (value === undefined || value === null || rule.honoured(value)) continue;
    return { param, value, why: rule.why };
  }
  return undefined;
}
