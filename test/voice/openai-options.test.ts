// The docs list every Chat Completions option Hearth ignores and every one it refuses (openai-options.ts):
// a user reading docs/voice-and-chat.md knows what the endpoint does with each option their app sends.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { IGNORED_OPTIONS, REFUSED_OPTIONS, refusedOption } from '../../src/http/openai-options.js';
import { ROOT } from '../helpers/cli.js';

const doc = readFileSync(join(ROOT, 'docs', 'voice-and-chat.md'), 'utf8');
const section = (title: string) => {
  const at = doc.indexOf(title);
  assert.ok(at >= 0, `docs/voice-and-chat.md has "${title}"`);
  // One bullet of the list: up to the next bullet or the paragraph's end.
  const ends = [doc.indexOf('\n- ', at), doc.indexOf('\n\n', at)].filter((i) => i > at);
  return doc.slice(at, Math.min(...ends));
};

describe('the OpenAI-compatible options, as the docs list them', () => {
  it('every ignored option is named in the docs list of ignored options, and every refused one in the refused list', () => {
    const ignored = section('Accepted and ignored');
    for (const o of IGNORED_OPTIONS) assert.ok(ignored.includes(`\`${o}\``), `${o} is listed as ignored`);
    const refused = section('Refused with a 400');
    for (const o of Object.keys(REFUSED_OPTIONS)) assert.ok(refused.includes(`\`${o}\``), `${o} is listed as refused`);
  });

  it('an option is ignored or refused, never both', () => {
    for (const o of IGNORED_OPTIONS) assert.equal(REFUSED_OPTIONS[o], undefined, o);
    assert.equal(refusedOption({ temperature: 2, tools: [] }), undefined);
    assert.equal(refusedOption({ response_format: { type: 'json_object' } })?.param, 'response_format');
  });
});
