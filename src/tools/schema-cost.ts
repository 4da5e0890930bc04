// How much work a tool's argument schema can make one validation do. Every
// caller's arguments are validated on the daemon's event loop, so a flow's
// schema must not be a bomb: a chain of `$defs` that each try three `$ref`s
// to the next (`anyOf`) is a 1 KB schema that validates one string 3^16
// times and collects as many errors. Counted here with each `$ref` expanded
// in place; a `$ref` that leads back to itself (validation repeating per
// level of the data) or points outside the schema is refused.

/** Most schema nodes one validation of a value may walk, with `$ref`s expanded. */
export const MAX_EXPANDED_SCHEMA_NODES = 5000;

const UNSUPPORTED = ['$dynamicRef', '$recursiveRef', '$dynamicAnchor', '$recursiveAnchor'];

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
  const memo = new Map<object, number>();
  const onPath = new Set<object>();
  let problem: string | undefined;

  // Depth is bounded by the caller (MAX_SCHEMA_DEPTH) and by following refs only along acyclic paths.
  const cost = (node: unknown): number => {
    if (problem || !node || typeof node !== 'object') return 0;
    const known = memo.get(node);
    if (known !== undefined) return known;
    if (onPath.has(node)) {
      problem = 'a $ref leads back to the schema that holds it (recursive schemas are not supported for flow tools)';
      return 0;
    }
    onPath.add(node);
    let total = 1;
    for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
      if (UNSUPPORTED.includes(key)) {
        problem = `${key} is not supported for flow tools`;
        break;
      }
      if (key === '$ref' && typeof value === 'string') {
        const target = resolve(schema, value);
        if (target === undefined) {
          problem = `$ref ${JSON.stringify(value.slice(0, 80))} does not point inside this schema ("#/$defs/<name>")`;
          break;
        }
        total += cost(target);
      } else {
        total += cost(value);
      }
      if (total > MAX_EXPANDED_SCHEMA_NODES) {
        problem = `with its $refs expanded the schema has more than ${MAX_EXPANDED_SCHEMA_NODES} parts; validating one call would take too long`;
        break;
      }
    }
    onPath.delete(node);
    memo.set(node, total);
    return total;
  };
  cost(schema);
  return problem;
}
