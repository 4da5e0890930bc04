// A flow tool's schema is run on every caller's arguments on the daemon's
// event loop. A 1 KB schema whose `$defs` each try three `$ref`s to the next
// made one call with {"x": "a"} validate 3^16 times, collecting as many
// errors: minutes of a stalled home, then out of memory. Schemas whose work
// with `$ref`s expanded is unbounded, recursive or outside the schema are now
// refused when the tool is declared, naming the field (before, all of these
// were accepted). No timing is measured.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkExternalToolDef, ExternalToolError } from '../../src/tools/external-tools.js';
import { checkDefinitions, FlowToolProviderError } from '../../src/tools/flow-tool-providers.js';

const def = (parameters: Record<string, unknown>) => ({ name: 'lookup', description: 'Look a thing up.', parameters, capability: 'read' as const });

/** `$defs` d0..dN, each an anyOf of three refs to the one before. */
function bomb(levels: number): Record<string, unknown> {
  const defs: Record<string, unknown> = { d0: { type: 'string', maxLength: 0 } };
  for (let i = 1; i <= levels; i++) defs[`d${i}`] = { anyOf: [1, 2, 3].map(() => ({ $ref: `#/$defs/d${i - 1}` })) };
  return { type: 'object', $defs: defs, properties: { x: { $ref: `#/$defs/d${levels}` } } };
}

const refusedAt = (parameters: Record<string, unknown>, why: RegExp) => {
  assert.throws(
    () => checkExternalToolDef(def(parameters)),
    (err: unknown) => err instanceof ExternalToolError && err.code === 'bad_schema' && why.test(err.message),
  );
  assert.throws(
    () => checkDefinitions([def(parameters)]),
    (err: unknown) => err instanceof FlowToolProviderError && err.field === 'tools[0].parameters',
  );
};

describe('flow tool schemas cannot make validation explode', () => {
  it('refuses a $ref fan-out whose expansion is too large', () => {
    assert.ok(JSON.stringify(bomb(16)).length < 2000, 'the bomb is small');
    refusedAt(bomb(16), /more than \d+ parts/);
  });

  it('refuses a $ref back to an enclosing schema', () => {
    refusedAt({ type: 'object', properties: { x: { anyOf: [{ properties: { a: { $ref: '#' } } }, { properties: { a: { $ref: '#' } } }] } } }, /leads back/);
    refusedAt(
      { type: 'object', $defs: { a: { anyOf: [{ $ref: '#/$defs/b' }] }, b: { $ref: '#/$defs/a' } }, properties: { x: { $ref: '#/$defs/a' } } },
      /leads back/,
    );
  });

  it('refuses a $ref outside the schema, and dynamic refs', () => {
    refusedAt({ type: 'object', properties: { x: { $ref: 'https://example.com/schema.json' } } }, /does not point inside/);
    refusedAt({ type: 'object', properties: { x: { $ref: '#/$defs/missing' } } }, /does not point inside/);
    refusedAt({ type: 'object', properties: { x: { $dynamicRef: '#meta' } } }, /\$dynamicRef is not supported/);
  });

  it('refuses a nested $id, which makes a $ref mean another subschema to ajv (issue 27)', () => {
    // 12 levels, each an $id of its own whose "#/$defs/n" means that level's own definitions to ajv.
    let inner: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 12; i++) {
      inner = { $id: `level${i}`, $defs: { n: inner }, anyOf: [{ $ref: '#/$defs/n' }, { $ref: '#/$defs/n' }] };
    }
    refusedAt({ type: 'object', properties: { x: inner } }, /\$id inside the schema is not supported/);
    refusedAt({ type: 'object', $defs: { a: { $anchor: 'here', type: 'string' } }, properties: { x: { type: 'string' } } }, /\$anchor inside/);
  });

  it('refuses items -> $ref -> a 1,000-branch anyOf (1.6 KB, inside every size bound): one validation per element (issue 27)', () => {
    const wide = { anyOf: Array.from({ length: 1000 }, (_, i) => ({ const: i })) };
    const schema = { type: 'object', $defs: { w: wide }, properties: { xs: { type: 'array', items: { $ref: '#/$defs/w' } } } };
    refusedAt(schema, /could take more than [\d,]+ checks .*maxItems/);
    // The same with the array bounded is a small job, and is kept.
    const bounded = { ...schema, properties: { xs: { type: 'array', maxItems: 20, items: { $ref: '#/$defs/w' } } } };
    const validate = checkExternalToolDef(def(bounded));
    assert.equal(validate({ xs: [1, 999] }), true);
    assert.equal(validate({ xs: [1000] }), false);
  });

  it('keeps arrays of objects and lists of strings without maxItems', () => {
    assert.doesNotThrow(() =>
      checkExternalToolDef(
        def({
          type: 'object',
          properties: {
            tags: { type: 'array', items: { type: 'string', maxLength: 40 } },
            rooms: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' }, level: { type: 'integer' } } } },
          },
        }),
      ),
    );
  });

  it('keeps small schemas that share definitions by $ref', () => {
    const validate = checkExternalToolDef(
      def({
        type: 'object',
        $defs: { when: { type: 'string', pattern: '^\\d{2}:\\d{2}$' } },
        properties: { from: { $ref: '#/$defs/when' }, to: { $ref: '#/$defs/when' } },
        required: ['from'],
      }),
    );
    assert.equal(validate({ from: '07:30', to: '08:00' }), true);
    assert.equal(validate({ from: 'soon' }), false);
    assert.doesNotThrow(() => checkExternalToolDef(def(bomb(4))));
  });
});
