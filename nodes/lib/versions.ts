// Node settings across versions. A flow saved before a node had `version` in
// its defaults is version 0; each node's settings are brought to the current
// version here, so an old flows.json keeps doing what it did.

/** The current settings version of each node type. */
export const CURRENT_VERSION = 1;

export function versionOf(def: Record<string, unknown>): number {
  const v = def.version;
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d+$/.test(v.trim()) ? Number(v) : 0;
  return Number.isFinite(n) ? n : 0;
}

/**
 * The settings of a node as the current version reads them.
 * - hearth-bridge 0 -> 1: version 0 always embedded Hearth (its own database next to flows.json);
 *   version 1 connects to a running daemon unless `mode` says embedded. An old bridge stays embedded.
 * - hearth-device 0 -> 1: version 0 sent the result text in msg.payload; version 1 sends
 *   {outcome, entity, state, auditId, approvalId} and the text in msg.text. An old node keeps `output: text`.
 */
export function migrate<T extends Record<string, unknown>>(def: T): T & { version: number } {
  const from = versionOf(def);
  const out: Record<string, unknown> = { ...def };
  if (from < 1) {
    if (def.type === 'hearth-bridge' && !def.mode) out.mode = 'embedded';
    if (def.type === 'hearth-device' && !def.output) out.output = 'text';
  }
  out.version = CURRENT_VERSION;
  return out as T & { version: number };
}
