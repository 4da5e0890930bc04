// Lowercase ASCII slugs and short stable hashes: the pieces of tool names,
// device ids and entity keys, shared by discovery and the tool generator.
import { createHash } from 'node:crypto';

/** Lowercase ASCII slug: accents folded, everything else becomes `_`, no `__`. */
export function slug(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '_')
    .replace(/_+/g, '_')
    .replace(/-+/g, '-')
    .replace(/^[_-]+|[_-]+$/g, '');
}

export function shortHash(text: string, length = 6): string {
  return createHash('sha256').update(text).digest('hex').slice(0, length);
}
