// One way to build validators and to turn their errors into "where: what".
import { Ajv, type ErrorObject, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';

// ajv-formats ships CJS typings; its default export is the plugin function.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

export function createAjv(options: Options = {}): Ajv {
  const ajv = new Ajv({ allErrors: true, strict: false, ...options });
  addFormats(ajv);
  return ajv;
}

/** `/mqtt/port` -> `mqtt.port`; `/entities/lamp/kind` -> `entities.lamp.kind`; array items as `[2]`. */
export function pointerToPath(pointer: string): string {
  if (!pointer) return '';
  return pointer
    .split('/')
    .slice(1)
    .map((seg) => seg.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((acc, seg) => (/^\d+$/.test(seg) ? `${acc}[${seg}]` : acc ? `${acc}.${seg}` : seg), '');
}

function describe(value: unknown): string {
  const text = JSON.stringify(value);
  if (text === undefined) return String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

export interface SchemaProblem {
  path: string;
  message: string;
}

/** Collapse ajv's errors into one line per problem, naming the field and what was expected. */
export function schemaProblems(errors: ErrorObject[] | null | undefined, data?: unknown): SchemaProblem[] {
  const out: SchemaProblem[] = [];
  const seen = new Set<string>();
  for (const err of errors ?? []) {
    let path = pointerToPath(err.instancePath);
    let message: string;
    switch (err.keyword) {
      case 'additionalProperties': {
        const extra = (err.params as { additionalProperty: string }).additionalProperty;
        path = path ? `${path}.${extra}` : extra;
        message = 'is not a known field';
        break;
      }
      case 'required': {
        const missing = (err.params as { missingProperty: string }).missingProperty;
        path = path ? `${path}.${missing}` : missing;
        message = 'is required';
        break;
      }
      case 'enum':
        message = `must be one of ${(err.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
        break;
      case 'if':
      case 'anyOf':
      case 'oneOf':
        // The branch errors around it say the useful thing.
        continue;
      default:
        message = err.message ?? 'is invalid';
    }
    if (data !== undefined && err.keyword !== 'required' && err.keyword !== 'additionalProperties') {
      const value = valueAt(data, err.instancePath);
      if (value !== undefined && typeof value !== 'object') message += ` (got ${describe(value)})`;
    }
    const key = `${path}|${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ path: path || '(top level)', message });
  }
  return out;
}

export function valueAt(data: unknown, pointer: string): unknown {
  let cur: unknown = data;
  for (const seg of pointer.split('/').slice(1)) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[seg.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return cur;
}
