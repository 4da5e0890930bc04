// A fake OpenAI-compatible model (openai-server.ts) for a test file: started before its tests, closed after.
import { after, before } from 'node:test';
import { late } from './late.js';
import { type OpenAIServer, startOpenAIServer } from './openai-server.js';
import { started } from './use-home.js';

export function useModel(): OpenAIServer {
  let model: OpenAIServer | undefined;
  before(async () => {
    model = await startOpenAIServer();
  });
  after(async () => {
    await model?.close();
  });
  return late(() => started(model, 'the model'));
}

/** The settings that make a Hearth's agent talk to the fake model at `url`. */
export const agentOnModel = (url: string): Record<string, string> => ({ 'agent.provider': 'openai', 'agent.baseUrl': url, 'agent.model': 'test-model' });
