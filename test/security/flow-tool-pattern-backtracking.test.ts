// A flow tool's schema is run by the daemon on every caller's arguments. A
// `pattern` that backtracks exponentially (`^(a+)+$`) would let any caller of
// the tool (a guest included) stall the daemon's one event loop with a short
// string. Such patterns are now matched in linear time, and patterns that
// cannot be (backreferences, lookaround) are refused when the tool is
// declared, naming the field. No timing is measured: the evil input below
// would take hours on the backtracking engine, so the test finishing at all
// is the check.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkExternalToolDef, ExternalToolError } from '../../src/tools/external-tools.js';
import { checkDefinitions, FlowToolProviderError } from '../../src/tools/flow-tool-providers.js';

const def = (parameters: Record<string, unknown>) => ({
  name: 'lookup',
  description: 'Look a word up.',
  parameters,
  capability: 'read' as const,
});

// 60 a's and a "!": 2^60 ways to split the a's for a backtracking engine.
const EVIL = `${'a'.repeat(60)}!`;

describe('flow tool schema patterns cannot stall the daemon', () => {
  it('matches a nested-quantifier pattern in linear time', () => {
    const validate = checkExternalToolDef(def({ type: 'object', properties: { word: { type: 'string', pattern: '^(a+)+$' } } }));
    assert.equal(validate({ word: EVIL }), false);
    assert.equal(validate({ word: 'aaaa' }), true);
  });

  it('does so for patternProperties too', () => {
    const validate = checkExternalToolDef(def({ type: 'object', patternProperties: { '^(a|a)*$': { type: 'number' } }, additionalProperties: false }));
    assert.equal(validate({ [EVIL]: 1 }), false);
    assert.equal(validate({ aaa: 1 }), true);
  });

  for (const pattern of ['^(a+)\\1$', '^(?=a)a+$', '^a+(?<!b)$']) {
    it(`refuses ${pattern} when the tool is declared, naming parameters`, () => {
      assert.throws(
        () => checkExternalToolDef(def({ type: 'object', properties: { word: { type: 'string', pattern } } })),
        (err: unknown) => err instanceof ExternalToolError && err.code === 'bad_schema' && /linear time/.test(err.message),
      );
      assert.throws(
        () => checkDefinitions([def({ type: 'object', properties: { word: { type: 'string', pattern } } })]),
        (err: unknown) => err instanceof FlowToolProviderError && err.field === 'tools[0].parameters',
      );
    });
  }

  for (const pattern of ['^\\p{L}+$', '^[^\\u{1F600}]+$']) {
    it(`refuses ${pattern} rather than read it without Unicode escapes`, () => {
      assert.throws(
        () => checkExternalToolDef(def({ type: 'object', properties: { word: { type: 'string', pattern } } })),
        (err: unknown) => err instanceof ExternalToolError && err.code === 'bad_schema' && /do not support/.test(err.message),
      );
    });
  }

  it('keeps ordinary patterns working', () => {
    const validate = checkExternalToolDef(def({ type: 'object', properties: { code: { type: 'string', pattern: '^[A-Z]{2}-\\d{3}$' } } }));
    assert.equal(validate({ code: 'AB-123' }), true);
    assert.equal(validate({ code: 'ab-123' }), false);
  });
});
