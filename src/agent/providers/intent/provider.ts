// The offline intent model: Hearth's embedded default "model". No network, no
// weights: sentence templates matched against the home's own names and areas
// (like Home Assistant's hassil), resolved to calls on the tools the request
// offers. Round 1 turns the user's words into tool calls (or a reply); round 2
// turns the tool results into a plain-sentence answer.
import type { Entity } from '../../../devices/model.js';
import type { EntityState } from '../../../devices/state-cache.js';
import type { GeneratedTool } from '../../../tools/types.js';
import {
  NOT_UNDERSTOOD,
  ProviderError,
  type ChatMessage,
  type Provider,
  type ProviderEvent,
  type ProviderRequest,
  type ToolCallRequest,
  type Usage,
} from '../../provider.js';
import { chunkWords, composeAnswer, examples, replyText, type AnsweredCall } from './answers.js';
import { interpret, turnOf, type Interpretation, type PreviousTurn } from './interpret.js';
import { SentenceSet } from './sentence-set.js';
import type { MatchContext } from './matcher.js';
import type { PhraseIndex } from './phrases.js';
import { OfferedTools, TOOL_PREFIX } from './tools.js';
import { buildVocabulary, type Places, placesSignature, vocabularySignature, type Vocabulary } from './vocabulary.js';

export interface IntentProviderOptions {
  /** The home's entities now (the registry changes). */
  entities: () => Entity[];
  /** The generated tools now, to look up a request's tools by name. */
  tools: () => GeneratedTool[];
  /** Current states, for "brighter", "two degrees warmer", "toggle". */
  state?: (id: string) => EntityState | undefined;
  /** The time now, for history windows ("this morning"); default the clock. */
  now?: () => number;
  /** The home's areas and floors with their aliases now (said as their names are). */
  places?: () => Places;
  /** The sentence data: the shipped language plus a user's folder (default: shipped English). */
  sentences?: SentenceSet;
}

/** Longest user text looked at (a pasted essay is not a command). */
const MAX_UTTERANCE = 500;

export class IntentProvider implements Provider {
  readonly name = 'intent';
  readonly defaultModel = 'hearth-intent';
  readonly vision = false;

  private cached?: { signature: string; vocabulary: Vocabulary; entities: Entity[]; places: string; current: Vocabulary };
  readonly sentences: SentenceSet;

  constructor(private readonly options: IntentProviderOptions) {
    this.sentences = options.sentences ?? SentenceSet.shipped();
  }

  /** The slot lists for the home as it is now (rebuilt only when names, areas, kinds or the sentences changed). */
  private vocabulary(): Vocabulary {
    const entities = this.options.entities();
    const lang = this.sentences.current();
    const places = this.options.places?.();
    const placesKey = placesSignature(places);
    const c = this.cached;
    // The same entity objects as last time (pointer compares only) and the same aliases of places: nothing to redo.
    if (c && c.vocabulary.lang === lang && c.places === placesKey && c.entities.length === entities.length && c.entities.every((e, i) => e === entities[i]))
      return c.current;
    const signature = vocabularySignature(entities, places);
    const vocabulary = c && c.signature === signature && c.vocabulary.lang === lang ? c.vocabulary : buildVocabulary(entities, lang, places);
    // Ranges and options may change without a rename: always act on the current objects.
    const current = { ...vocabulary, entities, byId: new Map(entities.map((e) => [e.id, e])) };
    this.cached = { signature, vocabulary, entities, places: placesKey, current };
    return current;
  }

  private examplesCache?: { vocabulary: Vocabulary; byTools: Map<string, string[]> };

  /** Example phrasings for this home and these tools (worked out once per home and tool list). */
  private examplesFor(vocabulary: Vocabulary, offered: OfferedTools, toolNames: string[]): string[] {
    if (this.examplesCache?.vocabulary !== vocabulary) this.examplesCache = { vocabulary, byTools: new Map() };
    const key = toolNames.join('\u0000');
    let list = this.examplesCache.byTools.get(key);
    if (!list) {
      if (this.examplesCache.byTools.size > 32) this.examplesCache.byTools.clear();
      this.examplesCache.byTools.set(key, (list = examples(vocabulary.entities, offered, vocabulary.lang.responses)));
    }
    return list;
  }

  /** Phrasings this home and these tools support, as the "not understood" answer offers them (a chat's `help`). */
  examples(toolNames: string[], readable?: (entityId: string) => boolean): string[] {
    const vocabulary = readable ? readableView(this.vocabulary(), readable) : this.vocabulary();
    return examples(vocabulary.entities, new OfferedTools(toolNames, this.options.tools()), vocabulary.lang.responses, false);
  }

  /** Build the home's vocabulary now (after the devices changed), so the next utterance does not wait for it. */
  warm(): void {
    this.vocabulary();
  }

  /** Understand one utterance against the home and the offered tool names (for tests and diagnostics). */
  understand(text: string, toolNames: string[], context: MatchContext = {}, schemas?: ReadonlyMap<string, unknown>): Interpretation & { text?: string } {
    const vocabulary = context.readable ? readableView(this.vocabulary(), context.readable) : this.vocabulary();
    const offered = new OfferedTools(toolNames, this.options.tools(), schemas);
    const result = interpret(text.slice(0, MAX_UTTERANCE), { vocabulary, offered, context, state: this.options.state, now: this.options.now });
    if (result.reply) {
      const hints =
        ['not_understood', 'not_found', 'out_of_scope'].includes(result.reply.type) && !('closest' in result.reply && result.reply.closest?.length)
          ? this.examplesFor(vocabulary, offered, toolNames)
          : [];
      return { ...result, text: replyText(result.reply, hints, vocabulary.lang.responses) };
    }
    return result;
  }

  /** What an understood command leaves for the session's next sentence (undefined when it did nothing). */
  turn(understood: Interpretation): PreviousTurn | undefined {
    return turnOf(understood);
  }

  async *stream(request: ProviderRequest): AsyncIterable<ProviderEvent> {
    if (request.signal?.aborted) throw new ProviderError('the model request was aborted', 'aborted');
    // Images a tool returned may follow its results as a user message: still round 2.
    let end = request.messages.length;
    while (end > 1 && isImageFollowUp(request.messages[end - 1]) && request.messages[end - 2].role === 'tool') end--;
    const messages = request.messages.slice(0, end);
    const toolNames = request.tools.map((t) => t.function.name);
    // The session's own tool schemas: a caller's tools name only the entities it may read.
    const schemas = new Map(request.tools.map((t) => [t.function.name, t.function.parameters as unknown]));
    const last = messages[messages.length - 1];
    const prompt = Math.ceil(messages.reduce((n, m) => n + textOf(m).length, 0) / 4);

    const area = request.context?.area;
    const readable = request.context?.readable;
    if (last?.role === 'tool') {
      const text = this.secondRound(messages, toolNames, { area, readable }, schemas);
      yield* this.say(text, prompt);
      return;
    }
    const at = lastUser(messages, messages.length);
    const utterance = at >= 0 ? textOf(messages[at]) : '';
    const context: MatchContext = { area, readable, previous: this.previousTurn(messages, at, toolNames, { area, readable }, schemas) };
    const understood = this.understand(utterance, toolNames, context, schemas);
    if (!understood.calls.length) {
      // Not understood, or no such device here: a door may let another agent try (Wyoming's not-handled).
      // Beyond Hearth ("what's the weather like?") too: another agent may know.
      const lost =
        !understood.reply ||
        understood.reply.type === 'not_understood' ||
        understood.reply.type === 'out_of_scope' ||
        (understood.reply.type === 'not_found' && !understood.reply.closest?.length);
      yield* this.say(understood.text ?? this.sentences.current().responses.say('not_understood'), prompt, lost ? NOT_UNDERSTOOD : 'stop');
      return;
    }
    // Ids unique within the conversation: after every call already in it.
    const earlier = messages.reduce((n, m) => n + (m.role === 'assistant' ? (m.tool_calls?.length ?? 0) : 0), 0);
    const toolCalls: ToolCallRequest[] = understood.calls.map((c, i) => ({
      id: `intent_${earlier + i + 1}`,
      name: `${TOOL_PREFIX}${c.tool}`,
      arguments: JSON.stringify(c.args),
    }));
    for (const call of toolCalls) {
      yield { type: 'tool_call_started', id: call.id, name: call.name };
      yield { type: 'tool_call_args_delta', id: call.id, delta: call.arguments };
    }
    const completion = Math.ceil(toolCalls.reduce((n, c) => n + c.name.length + c.arguments.length, 0) / 4);
    // One sentence is one request: its actions are all made or none.
    yield { type: 'done', finishReason: 'tool_calls', toolCalls, usage: usage(prompt, completion), ...(toolCalls.length > 1 ? { together: true } : {}) };
  }

  /**
   * What "it" and "too" refer to: the session's last few sentences before message `before`, understood in
   * order (each with the one before it), as the last of them left things.
   */
  private previousTurn(
    messages: ChatMessage[],
    before: number,
    toolNames: string[],
    where: Pick<MatchContext, 'area' | 'readable'>,
    schemas?: ReadonlyMap<string, unknown>,
  ): PreviousTurn | undefined {
    const said: string[] = [];
    for (let i = lastUser(messages, before); i >= 0 && said.length < FOLLOW_UP_DEPTH; i = lastUser(messages, i)) said.unshift(textOf(messages[i]));
    let previous: PreviousTurn | undefined;
    for (const text of said) previous = turnOf(this.understand(text, toolNames, { ...where, previous }, schemas)) ?? previous;
    return previous;
  }

  /** The answer to the tool results that end the conversation. */
  private secondRound(
    messages: ChatMessage[],
    toolNames: string[],
    where: Pick<MatchContext, 'area' | 'readable'>,
    schemas?: ReadonlyMap<string, unknown>,
  ): string {
    let i = messages.length;
    while (i > 0 && messages[i - 1].role === 'tool') i--;
    const results = messages.slice(i) as Array<Extract<ChatMessage, { role: 'tool' }>>;
    const asking = messages[i - 1];
    const calls = asking?.role === 'assistant' ? (asking.tool_calls ?? []) : [];
    const byId = new Map(calls.map((c) => [c.id, c]));
    const answered: AnsweredCall[] = [];
    for (const r of results) {
      const call = byId.get(r.tool_call_id);
      if (!call) continue;
      answered.push({
        tool: call.name.startsWith(TOOL_PREFIX) ? call.name.slice(TOOL_PREFIX.length) : call.name,
        args: parseArgs(call.arguments),
        result: contentText(r.content),
      });
    }
    const responses = this.sentences.current().responses;
    if (!answered.length) return responses.say('no_reply_match');
    // The question decides yes/no ("is the front door locked?").
    const at = lastUser(messages, i);
    const context: MatchContext = { ...where, previous: at >= 0 ? this.previousTurn(messages, at, toolNames, where, schemas) : undefined };
    const understood = at >= 0 ? this.understand(textOf(messages[at]), toolNames, context, schemas) : undefined;
    const tools = new Map(this.options.tools().map((t) => [t.name, t]));
    const entities = new Map(this.options.entities().map((e) => [e.id, e]));
    return composeAnswer(answered, {
      entity: (id) => entities.get(id),
      tool: (name) => tools.get(name),
      asked: understood?.asked,
      ask: understood?.ask,
      subjects: understood?.entities.map((e) => e.id),
      change: understood?.meant?.captures.direction,
      kind: understood?.meant?.captures.kind?.value.id,
      responses,
    });
  }

  private async *say(text: string, prompt: number, finishReason = 'stop'): AsyncIterable<ProviderEvent> {
    for (const chunk of chunkWords(text)) yield { type: 'token', text: chunk };
    yield { type: 'done', finishReason, toolCalls: [], usage: usage(prompt, Math.ceil(text.length / 4)) };
  }
}

/** How many earlier sentences of a session are looked at for "it" and "too". */
const FOLLOW_UP_DEPTH = 3;

/** Index of the last user message (not an image follow-up) before `before`, or -1. */
function lastUser(messages: ChatMessage[], before: number): number {
  for (let i = before - 1; i >= 0; i--) if (messages[i].role === 'user' && !isImageFollowUp(messages[i])) return i;
  return -1;
}

function isImageFollowUp(m: ChatMessage): boolean {
  if (m.role !== 'user' || !Array.isArray(m.content)) return false;
  return m.content.some((p) => p.type === 'image_url') && m.content.every((p) => p.type === 'image_url' || /^Image\(s\) returned by /.test(p.text));
}

function usage(prompt: number, completion: number): Usage {
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

function textOf(m: ChatMessage): string {
  if (m.role === 'assistant') return m.content ?? '';
  if (m.role === 'user' && Array.isArray(m.content)) return m.content.map((p) => (p.type === 'text' ? p.text : '')).join(' ');
  return typeof m.content === 'string' ? m.content : '';
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (p && typeof p === 'object' && 'text' in p ? String((p as { text: unknown }).text) : '')).join('\n');
  return '';
}

function parseArgs(text: string): Record<string, unknown> {
  if (!text) return {};
  try {
    const v = JSON.parse(text) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/**
 * The home as a caller that may read only some of it knows it: the entities it may not read are not there (not
 * found by name, kind or area, not suggested, not in examples), as an entity that does not exist.
 */
function readableView(v: Vocabulary, readable: (entityId: string) => boolean): Vocabulary {
  const entities = v.entities.filter((e) => readable(e.id));
  if (entities.length === v.entities.length) return v;
  const byWord = new Map<string, Entity[]>();
  for (const [word, named] of v.byWord) {
    const kept = named.filter((e) => readable(e.id));
    if (kept.length) byWord.set(word, kept);
  }
  // A name only the hidden entities have is not a name here: not matched, nor a word a typo is corrected to.
  const names = Object.create(v.names) as PhraseIndex<string[]>;
  const visible = (ids: string[] | undefined) => {
    const kept = ids?.filter(readable);
    return kept?.length ? kept : undefined;
  };
  names.match = (tokens, pos) =>
    v.names.match(tokens, pos).flatMap((hit) => {
      const value = visible(hit.value);
      return value ? [{ ...hit, value }] : [];
    });
  names.get = (keys) => visible(v.names.get(keys));
  names.has = (keys) => !!names.get(keys);
  const areaWords = new Set(v.areas.words());
  const nameWords = new Set([...v.nameWords].filter((w) => byWord.has(w) || areaWords.has(w) || !v.byWord.has(w)));
  return { ...v, entities, byId: new Map(entities.map((e) => [e.id, e])), byWord, names, nameWords };
}
