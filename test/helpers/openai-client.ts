// The `openai` npm client against a Hearth's OpenAI-compatible endpoint, as the tests use it.
import OpenAI from 'openai';

/** A client for the server at `url` (its /v1), with the token `apiKey`; no retries. */
export const chatClient = (url: string, apiKey: string, headers: Record<string, string> = {}) =>
  new OpenAI({ apiKey, baseURL: `${url}/v1`, maxRetries: 0, timeout: 20_000, defaultHeaders: headers });

/** One question, one answer's text. */
export const ask = async (c: OpenAI, text: string) =>
  (await c.chat.completions.create({ model: 'hearth', messages: [{ role: 'user', content: text }] })).choices[0]!.message.content ?? '';
