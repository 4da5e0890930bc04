// The agent Hearth runs, chosen by config: the builtin engine over the offline
// intent model (the default: no network, no weights) or an OpenAI-compatible
// server; or a `jan` runtime driven over the kit's protocol.
import type { Hearth } from '../hearth.js';
import { BuiltinEngine } from './builtin-engine.js';
import type { Provider } from './provider.js';
import { IntentProvider } from './providers/intent/index.js';
import { OpenAIProvider } from './providers/openai.js';
import { homeSystemPrompt } from './system-prompt.js';
import type { Engine } from './types.js';

export function createProvider(hearth: Hearth): Provider {
  const agent = hearth.bridge.config.agent;
  if (agent.provider === 'openai') {
    return new OpenAIProvider({
      baseUrl: agent.baseUrl,
      apiKey: agent.apiKey,
      model: agent.model!,
      vision: agent.vision,
      timeoutMs: agent.timeoutMs,
      log: hearth.bridge.log.child({ part: 'model' }),
    });
  }
  // The tools a request offers are this home's generated tools (a principal's subset of them).
  return new IntentProvider({ entities: () => hearth.bridge.registry.entities(), tools: () => hearth.tools.all() });
}

export async function createEngine(hearth: Hearth): Promise<Engine> {
  const agent = hearth.bridge.config.agent;
  if (agent.engine === 'jan') {
    const { JanEngine, findJanBin } = await import('./rpc/jan-engine.js');
    const bin = agent.janBin ?? findJanBin(process.env);
    if (!bin) throw new Error('agent.engine is jan, but neither agent.janBin, JAN_BIN nor a `jan` on PATH was found');
    return JanEngine.start({ bin, log: hearth.bridge.log.child({ part: 'jan' }) });
  }
  return BuiltinEngine.start({
    provider: createProvider(hearth),
    db: hearth.db,
    maxRounds: agent.maxRounds,
    // Only what the session's principal may read: a read deny holds in the prompt too.
    defaultSystemPrompt: (principal) => homeSystemPrompt(hearth.visibleEntities(principal)),
    log: hearth.bridge.log.child({ part: 'agent' }),
  });
}
