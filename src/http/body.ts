// Request bodies: JSON objects only, size-capped, and checked field by field
// so a 400 names the field at fault.
import type { IncomingMessage } from 'node:http';
import { badField, HttpError } from './errors.js';
import { jsonDepth, MAX_BODY_DEPTH } from '../util/bounded-json.js';

export const BODY_LIMIT = 1024 * 1024;

function tooLarge(limit: number): HttpError {
  return new HttpError(413, 'body_too_large', `the request body is larger than ${limit} bytes`, { limit });
}

/** Read the body as a JSON object; an empty body is `{}`. */
export async function readJsonObject(req: IncomingMessage, limit = BODY_LIMIT): Promise<Record<string, unknown>> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) {
    req.resume();
    throw tooLarge(limit);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  await new Promise<void>((resolve, reject) => {
    req.on('data', (chunk: Buffer) => {
      if (over) return;
      size += chunk.length;
      if (size > limit) {
        over = true;
        chunks.length = 0;
        // Stop early: the caller answers 413 and closes the connection.
        resolve();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve());
    req.on('error', reject);
    // Gone before the body was complete (a settled promise ignores this after 'end').
    req.on('close', () => {
      if (!req.complete) reject(new HttpError(400, 'aborted', 'the client closed the connection before the request body was complete'));
    });
  });
  if (over) throw tooLarge(limit);
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return {};
  const type = String(req.headers['content-type'] ?? '')
    .split(';')[0]
    .trim()
    .toLowerCase();
  if (type && type !== 'application/json' && !type.endsWith('+json')) {
    throw new HttpError(415, 'unsupported_media_type', `the request body must be JSON (Content-Type: application/json), not ${type}`);
  }
  // Depth first: V8 parses 100,000 levels, but every walk after it would overflow the stack (a 500).
  if (jsonDepth(text, MAX_BODY_DEPTH) > MAX_BODY_DEPTH) {
    throw new HttpError(400, 'too_deep', `the request body nests deeper than ${MAX_BODY_DEPTH} levels`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new HttpError(400, 'bad_json', `the request body is not valid JSON: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new HttpError(
      400,
      'bad_request',
      `the request body must be a JSON object, not ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`,
    );
  }
  return value as Record<string, unknown>;
}

/** Refuse members the endpoint does not know (a typo should not pass silently). */
export function onlyFields(body: Record<string, unknown>, allowed: readonly string[]): void {
  for (const key of Object.keys(body)) {
    if (!allowed.includes(key)) throw badField(key, `unknown field; this endpoint takes ${allowed.map((a) => JSON.stringify(a)).join(', ') || 'no fields'}`);
  }
}

function show(v: unknown): string {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 60 ? `${s.slice(0, 59)}…` : s;
}

export function optionalString(
  body: Record<string, unknown>,
  field: string,
  opts: { max?: number; min?: number; pattern?: RegExp; hint?: string } = {},
): string | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw badField(field, `must be a string, got ${show(v)}`);
  const min = opts.min ?? 0;
  if (v.length < min) throw badField(field, min === 1 ? 'must not be empty' : `must be at least ${min} characters`);
  if (opts.max !== undefined && v.length > opts.max) throw badField(field, `must be at most ${opts.max} characters (got ${v.length})`);
  if (opts.pattern && !opts.pattern.test(v)) throw badField(field, `${show(v)} is not valid${opts.hint ? `: ${opts.hint}` : ''}`);
  return v;
}

export function requiredString(body: Record<string, unknown>, field: string, opts: Parameters<typeof optionalString>[2] = {}): string {
  const v = optionalString(body, field, { min: 1, ...opts });
  if (v === undefined) throw badField(field, 'is required');
  return v;
}

export function optionalBoolean(body: Record<string, unknown>, field: string): boolean | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw badField(field, `must be true or false, got ${show(v)}`);
  return v;
}

export function oneOf<T extends string>(body: Record<string, unknown>, field: string, values: readonly T[], required: true): T;
export function oneOf<T extends string>(body: Record<string, unknown>, field: string, values: readonly T[], required?: false): T | undefined;
export function oneOf<T extends string>(body: Record<string, unknown>, field: string, values: readonly T[], required = false): T | undefined {
  const v = body[field];
  if (v === undefined || v === null) {
    if (required) throw badField(field, `is required: one of ${values.join(', ')}`);
    return undefined;
  }
  if (typeof v !== 'string' || !values.includes(v as T)) throw badField(field, `must be one of ${values.join(', ')}, got ${show(v)}`);
  return v as T;
}
