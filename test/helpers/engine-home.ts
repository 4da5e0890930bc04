// A test file's demo home with the builtin engine in front of it, talking to a fake OpenAI-compatible model
// (openai-server.ts), and a session manager over the home's tools; started before the file's tests, closed after.
import { before } from 'node:test';
import { BuiltinEngine } from '../../src/agent/builtin-engine.js';
import { OpenAIProvider } from '../../src/agent/providers/openai.js';
import { SessionManager } from '../../src/agent/sessions.js';
import { late } from './late.js';
import { type OpenAIServer, startOpenAIServer } from './openai-server.js';
import { type HomeInTest, started, type UseHomeOptions, useHome } from './use-home.js';

export interface EngineHomeOptions extends UseHomeOptions {
  /** The engine's own system prompt. */
  systemPrompt: string;
  /** The provider's deadline per model request. */
  timeoutMs: number;
  maxRounds?: number;
}

export interface EngineHome {
  home: HomeInTest;
  /** The fake model: script its answers, read the requests it got. */
  model: OpenAIServer;
  engine: BuiltinEngine;
  sessions: SessionManager;
}

/** A provider for the fake model at `url`, as the engine tests configure it. */
export const testProvider = (url: string, timeoutMs: number) => new OpenAIProvider({ baseUrl: url, apiKey: 'sk-test', model: 'test-model', timeoutMs });

export function useEngineHome(options: EngineHomeOptions): EngineHome {
  const home = useHome(options);
  let model: OpenAIServer | undefined;
  let engine: BuiltinEngine | undefined;
  let sessions: SessionManager | undefined;
  before(async () => {
    model = await startOpenAIServer();
    engine = await BuiltinEngine.start({
      provider: testProvider(model.url, options.timeoutMs),
      db: home.hearth.db,
      maxRounds: options.maxRounds ?? 4,
      defaultSystemPrompt: () => options.systemPrompt,
    });
    sessions = new SessionManager(engine, home.hearth.tools);
    home.cleanup(async () => {
      await engine?.close();
      await model?.close();
    });
  });
  return {
    home,
    model: late(() => started(model, 'the model')),
    engine: late(() => started(engine, 'the engine')),
    sessions: late(() => started(sessions, 'the sessions')),
  };
}
