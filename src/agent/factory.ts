// The agent Hearth runs, chosen by config: the builtin engine over the offline
// intent model (the default: no network, no weights) or an OpenAI-compatible
// server; or a `jan` runtime driven over the kit's protocol.
import type { Hearth } from '../hearth.js';
import { BuiltinEngine } from './builtin-engine.js';
import type { Provider } from './provider.js';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { IntentProvider, SentenceSet, SHIPPED_SENTENCES } from './providers/intent/index.js';
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
  const intent = hearth.bridge.config.intent;
  const log = hearth.bridge.log.child({ part: 'intent' });
  // A folder that is not there is a broken config; a bad file in one is reported and skipped.
  if (!existsSync(join(SHIPPED_SENTENCES, intent.language))) {
    throw new Error(`intent.language: Hearth ships no sentences for "${intent.language}" (no folder ${join(SHIPPED_SENTENCES, intent.language)})`);
  }
  if (intent.sentences && !(existsSync(intent.sentences) && statSync(intent.sentences).isDirectory())) {
    throw new Error(`intent.sentences: ${intent.sentences} is not a folder`);
  }
  // The shipped sentences compile once per process; a user's folder is watched for changes.
  const sentences =
    intent.sentences || intent.language !== 'en'
      ? new SentenceSet({ language: intent.language, userDir: intent.sentences, watch: !!intent.sentences, log })
      : SentenceSet.shipped();
  const provider = new IntentProvider({
    // In rank order: where two names say the same, the first ranked keeps it. Only what agents are shown.
    entities: () => hearth.bridge.registry.exposed(),
    tools: () => hearth.tools.all(),
    state: (id) => hearth.bridge.cache.get(id),
    // Areas and floors are said by their aliases too ("the lounge" for the Living Room).
    places: () => ({ areas: hearth.home.home.areas.all(), floors: hearth.home.home.floors.all() }),
    sentences,
  });
  // A voice satellite should not wait for the vocabulary of a big home: build it when the devices change.
  let pending: NodeJS.Immediate | undefined;
  hearth.bridge.registry.on('changed', () => {
    if (pending) return;
    pending = setImmediate(() => {
      pending = undefined;
      try {
        provider.warm();
      } catch (err) {
        log.warn({ err }, 'could not prepare the intent vocabulary');
      }
    });
    pending.unref?.();
  });
  provider.warm();
  return provider;
}

export async function createEngine(hearth: Hearth): Promise<Engine> {
  const agent = hearth.bridge.config.agent;
  if (agent.engine === 'jan') {
    const { JanEngine, findJanBin } = await import('./rpc/jan-engine.js');
    const bin = agent.janBin ?? findJanBin(process.env);
    if (!bin) throw new Error('agent.engine is jan, but neither agent.janBin, JAN_BIN nor a `jan` on PATH was found');
    return JanEngine.start({
      bin,
      log: hearth.bridge.log.child({ part: 'jan' }),
      refuse: (...a) => hearth.tools.refuse(...a),
      maxActionsPerTurn: agent.maxActionsPerTurn,
    });
  }
  return BuiltinEngine.start({
    provider: createProvider(hearth),
    db: hearth.db,
    maxRounds: agent.maxRounds,
    // The one bound on actions per turn, for every door that runs a turn (turn-actuations.ts).
    maxActionsPerTurn: agent.maxActionsPerTurn,
    // Only what the session's principal may read: a read deny holds in the prompt too.
    defaultSystemPrompt: (principal) => homeSystemPrompt(hearth.agentEntities(principal)),
    // One request's actions all or none: what the policy says now, an approval already granted counting as yes.
    decide: (tool, args, principal) => {
      const d = hearth.tools.preview(tool, args, principal);
      if (d?.effect !== 'confirm') return d;
      const request = hearth.tools.policyRequest(tool, args, principal);
      const entityId = request?.entityId || null;
      const now = entityId ? hearth.pipeline.sendsNow(entityId, args) : undefined;
      const sends = now && 'sends' in now ? now.sends : null;
      const granted = hearth.approvals.isGranted({ principal: principal.id, tool, entityId, args, sends });
      return granted ? { effect: 'allow', reason: 'an approval was granted for this call' } : d;
    },
    // The offline model knows the home itself: it must know only what the session's principal may read.
    mayRead: (principal, entityId) => {
      const entity = hearth.bridge.registry.entity(entityId);
      return !!entity && (hearth.tools.mayRead?.(principal, entity) ?? true);
    },
    // A call refused before its handler is audited as at every other door.
    refuse: (...a) => hearth.tools.refuse(...a),
    log: hearth.bridge.log.child({ part: 'agent' }),
  });
}
