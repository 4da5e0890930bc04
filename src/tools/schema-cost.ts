// How much work a tool's argument schema can make one validation do. Every
// caller's arguments are validated on the daemon's event loop, so a flow's
// schema must not be a bomb: a chain of `$defs` that each try three `$ref`s
// to the next (`anyOf`) is a 1 KB schema that validates one string 3^16
// times and collects as many errors. Counted here with each `$ref` expanded
// in place; a `$ref` that leads back to itself (validation repeating per
// level of the data) or points outside the schema is refused.
//
// A keyword that applies its subschema to every element (`items`,
// `additionalProperties`, ...) multiplies that subschema's work by the number
// of values it can meet: `items` -> `$ref` -> a 1,000-branch `anyOf` is 1.6 KB,
// but 10,000 array elements make it ten million checks. So each node counts
// once per value it can be applied to (at most the arguments' own bound on
// values, or the schema's maxItems/maxProperties), and the sum is bounded.
// `$id` and `$anchor` below the root are refused: they change what a `$ref`
// means (ajv resolves against the nearest `$id`), and no flow tool needs them.
import { MAX_ARGUMENT_NODES } from './argument-bounds.js';

/** Most schema nodes one validation of a value may walk, with `$ref`s expanded. */
export const MAX_EXPANDED_SCHEMA_NODES = 5000;

/** Most (schema node, value) checks one validation may make, per-element keywords counted per element. */
export const MAX_VALIDATION_WORK = 1_000_000;

const UNSUPPORTED = ['$dynamicRef', '$recursiveRef', '$dynamicAnchor', '$recursiveAnchor'];
/** Keywords that change the base a `$ref` resolves against. */
const REBASING = ['$id', 'id', '$anchor'];
/** Keywords whose subschema applies to each element of an array or each member of an object. */
const PER_ELEMENT_ARRAY = ['items', 'additionalItems', 'contains', 'unevaluatedItems'];
const PER_ELEMENT_OBJECT = ['additionalProperties', 'patternProperties', 'propertyNames', 'unevaluatedProperties'];

/** The value a local JSON pointer (`#/$defs/a`) names, or undefined. */
function resolve(root: unknown, ref: string): unknown {
  if (ref === '#') return root;
  if (!ref.startsWith('#/')) return undefined;
  let at: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!at || typeof at !== 'object' || !Object.hasOwn(at, key)) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

/** What is wrong with the schema's cost, or undefined when it is bounded. */
export function schemaCostProblem(schema: unknown): string | undefined {
  // node -> reach -> its subtree's (expanded nodes, work); the same subschema met again costs the same again.
  const memo = new Map<object, Map<number, Cost>>();
  const onPath = new Set<object>();
  let problem: string | undefined;

  /** How many values a per-element keyword of `owner` can meet, for one value of `owner`. */
  const elements = (owner: Record<string, unknown>, key: string): number => {
    const bound = PER_ELEMENT_ARRAY.includes(key) ? owner.maxItems : owner.maxProperties;
    return typeof bound === 'number' && bound >= 0 ? Math.min(bound, MAX_ARGUMENT_NODES) : MAX_ARGUMENT_NODES;
  };
  const add = (a: Cost, b: Cost) => {
    a.nodes += b.nodes;
    a.work += b.work;
    if (!problem && a.nodes > MAX_EXPANDED_SCHEMA_NODES)
      problem = `with its $refs expanded the schema has more than ${MAX_EXPANDED_SCHEMA_NODES} parts; validating one call would take too long`;
    if (!problem && a.work > MAX_VALIDATION_WORK)
      problem = `validating one call could take more than ${MAX_VALIDATION_WORK.toLocaleString('en')} checks (a subschema applied to every element of an array or object counts once per element: bound it with maxItems / maxProperties, or make it smaller)`;
  };

  // `reach`: how many values of the arguments this node can be applied to (never more than they hold).
  const walk = (node: unknown, reach: number, root: boolean): Cost => {
    if (problem || !node || typeof node !== 'object') return { nodes: 0, work: 0 };
    const known = memo.get(node)?.get(reach);
    if (known) return known;
    if (onPath.has(node)) {
      problem = 'a $ref leads back to the schema that holds it (recursive schemas are not supported for flow tools)';
      return { nodes: 0, work: 0 };
    }
    onPath.add(node);
    const list = Array.isArray(node);
    const total: Cost = list ? { nodes: 0, work: 0 } : { nodes: 1, work: reach };
    const obj = node as Record<string, unknown>;
    for (const [key, value] of Object.entries(obj)) {
      if (problem) break;
      if (UNSUPPORTED.includes(key)) {
        problem = `${key} is not supported for flow tools`;
        break;
      }
      if (!list && !root && REBASING.includes(key) && typeof value === 'string') {
        problem = `${key} inside the schema is not supported for flow tools (it changes what a $ref points at): use "$ref": "#/$defs/<name>"`;
        break;
      }
      if (!list && key === '$ref' && typeof value === 'string') {
        const target = resolve(schema, value);
        if (target === undefined) {
          problem = `$ref ${JSON.stringify(value.slice(0, 80))} does not point inside this schema ("#/$defs/<name>")`;
          break;
        }
        add(total, walk(target, reach, false));
      } else if (!list && (PER_ELEMENT_ARRAY.includes(key) || PER_ELEMENT_OBJECT.includes(key))) {
        const each = Math.min(reach * elements(obj, key), MAX_ARGUMENT_NODES);
        // patternProperties holds a map of subschemas; the others one subschema (or, for old `items`, a list).
        if (key === 'patternProperties' && value && typeof value === 'object') for (const sub of Object.values(value)) add(total, walk(sub, each, false));
        else add(total, walk(value, each, false));
      } else if (!list && (key === '$defs' || key === 'definitions')) {
        // Definitions cost something only where a $ref uses them; their $id/$anchor are checked there.
        for (const sub of Object.values((value ?? {}) as Record<string, unknown>)) checkRebasing(sub);
      } else {
        add(total, walk(value, reach, false));
      }
    }
    onPath.delete(node);
    let byReach = memo.get(node);
    if (!byReach) memo.set(node, (byReach = new Map()));
    byReach.set(reach, total);
    return total;
  };
  /** `$id` / `$anchor` anywhere in a definition, used or not. */
  const checkRebasing = (node: unknown, depth = 0): void => {
    if (problem || !node || typeof node !== 'object' || depth > 64) return;
    for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
      if (!Array.isArray(node) && REBASING.includes(key) && typeof value === 'string') {
        problem = `${key} inside the schema is not supported for flow tools (it changes what a $ref points at): use "$ref": "#/$defs/<name>"`;
        return;
      }
      checkRebasing(value, depth + 1);
    }
  };
  walk(schema, 1, true);
  return problem;
}

interface Cost {
  nodes: number;
  work: number;
}
