// What the offline intent model tests repeat: the demo home's entities and tools, and a question asked in two
// rounds (the model's calls, then what it says once those calls are answered).
import type { ChatMessage, ProviderEvent } from '../../src/agent/provider.js';
import type { IntentProvider } from '../../src/agent/providers/intent/index.js';
import { loadDeviceFiles } from '../../src/devices/loader.js';
import { generateTools, toolSpecs } from '../../src/tools/generator.js';
import type { HostTool } from '../../src/tools/types.js';

/** The demo home's entities, its tools in the grouped shape, and the tool names a model is offered. */
export const demo = loadDeviceFiles([new URL('../../devices/demo', import.meta.url).pathname]).devices.flatMap((d) => d.entities);
export const { tools } = generateTools(demo, { shape: 'grouped', groupAbove: 40 }, async () => ({}));
export const names = toolSpecs(tools).map((s) => s.function.name);

type Understood = ReturnType<IntentProvider['understand']>;
export type IntentCall = Understood['calls'][number];

/**
 * Round 1 (`understand`), the calls answered with `answer(call, i)`, round 2 streamed: the calls of round 1 and
 * the text of round 2.
 */
export async function twoRounds(
  model: IntentProvider,
  text: string,
  answer: (call: IntentCall, i: number) => string,
  offered: HostTool[] = tools,
): Promise<{ first: Understood; said: string }> {
  const first = model.understand(
    text,
    toolSpecs(offered).map((s) => s.function.name),
  );
  const raw = first.calls.map((c, i) => ({ id: `c${i}`, name: `host__${c.tool}`, arguments: JSON.stringify(c.args) }));
  const messages: ChatMessage[] = [
    { role: 'user', content: text },
    { role: 'assistant', content: null, tool_calls: raw },
    ...first.calls.map((c, i) => ({ role: 'tool' as const, tool_call_id: `c${i}`, content: answer(c, i) })),
  ];
  let said = '';
  for await (const e of model.stream({
    model: 'hearth-intent',
    messages,
    tools: toolSpecs(offered),
    signal: new AbortController().signal,
  }) as AsyncIterable<ProviderEvent>)
    if (e.type === 'token') said += e.text;
  return { first, said };
}

/** A read tool whose call never answers; `seen` has the call's abort signal and request id once it is made. */
export function neverAnswers(name: string, description: string): { tool: HostTool; seen: { signal?: AbortSignal; requestId: string } } {
  const seen: { signal?: AbortSignal; requestId: string } = { requestId: '' };
  const tool: HostTool = {
    name,
    description,
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    capability: 'read',
    handler: (_args, call) => {
      seen.signal = call.signal;
      seen.requestId = call.requestId;
      return new Promise(() => {});
    },
  };
  return { tool, seen };
}
