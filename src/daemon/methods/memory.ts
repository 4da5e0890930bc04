// `memory.list`, `memory.forget`: the answers the builtin engine remembers per principal. No store (no database
// file yet): nothing remembered.
import type { MemoryStore } from '../../agent/memory.js';
import { badParams, notFound } from '../protocol.js';
import type { MemoryJson } from '../schema.js';

function principalParam(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const p = raw.trim();
  if (!p) throw badParams(`principal ${JSON.stringify(raw)}: give a principal id, e.g. cli:alice or chat:kitchen`);
  return p;
}

export function listMemory(store: MemoryStore | undefined, p: { principal?: string; limit?: number }): MemoryJson[] {
  const principal = principalParam(p.principal);
  return store ? store.list({ ...(principal !== undefined ? { principal } : {}), limit: p.limit ?? 50 }) : [];
}

export function forgetMemory(store: MemoryStore | undefined, p: { principal?: string; id?: number; all?: boolean }): { forgotten: number } {
  const chosen = [p.principal !== undefined, p.id !== undefined, !!p.all].filter(Boolean).length;
  if (chosen !== 1) throw badParams('say what to forget: exactly one of principal, id or all');
  const principal = principalParam(p.principal);
  let forgotten = 0;
  if (store) {
    if (principal !== undefined) forgotten = store.forgetPrincipal(principal);
    else if (p.id !== undefined) forgotten = store.forgetId(p.id);
    else forgotten = store.forgetAll();
  }
  if (p.id !== undefined && !forgotten) throw notFound(`no memory entry ${p.id}; see hearth memory list`);
  return { forgotten };
}
