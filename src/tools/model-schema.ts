// What a model is told of a generated tool's arguments, and what the host checks. Some keywords only guard the
// host: a string's length bounds (an entity id of a megabyte, a 40-character `since`), a list's size, and
// `additionalProperties: false` (the properties already say what there is). A model never needs them to choose
// its arguments; they were ~340 of every request's tokens in a grouped set (issue 31's budget of 3,000), and some
// providers refuse `additionalProperties` in a function declaration. The host still validates against the whole
// schema (`argumentSchema`): a call over a bound, or with an argument the tool does not take, fails with a
// readable error. Where a bound means something to the caller (a message's 1,000 characters), the description
// says it.
import type { JsonSchema } from './types.js';

const told = new WeakMap<JsonSchema, JsonSchema>();

/** Keywords left out of what a model is told (the host checks them). */
const HOST_ONLY = ['maxLength', 'minLength', 'maxItems', 'minItems', 'uniqueItems', 'additionalProperties'];

/** The schema without what only guards the host (memoized: most tools of a kind share their schemas). */
export function schemaForModel(schema: JsonSchema): JsonSchema {
  const known = told.get(schema);
  if (known) return known;
  let out: JsonSchema = schema;
  if (HOST_ONLY.some((k) => k in schema)) {
    out = { ...schema };
    for (const k of HOST_ONLY) delete out[k];
  }
  const props = schema.properties as Record<string, JsonSchema> | undefined;
  if (props && typeof props === 'object') {
    const mapped = Object.fromEntries(Object.entries(props).map(([k, s]) => [k, schemaForModel(s)]));
    if (Object.entries(mapped).some(([k, s]) => s !== props[k])) out = { ...out, properties: mapped };
  }
  const items = schema.items as JsonSchema | undefined;
  if (items && typeof items === 'object' && !Array.isArray(items)) {
    const mapped = schemaForModel(items);
    if (mapped !== items) out = { ...out, items: mapped };
  }
  told.set(schema, out);
  return out;
}
