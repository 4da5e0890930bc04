// How an entity's state reads, in words and as JSON: one reading for the command line, the HTTP API, SSE, MCP
// and the page's API.
import { type Entity, FRAME_KINDS } from '../devices/model.js';
import type { EntityState } from '../devices/state-cache.js';
import { valueParts } from '../tools/state-text.js';

export { formatAge } from '../util/time.js';

/** The state in words: the agent's own (colour temperature as kelvin and a name, device text cleaned). */
export function stateWords(entity: Entity, state: EntityState | undefined): string {
  if (!state) return 'unknown';
  if (FRAME_KINDS.has(entity.kind)) {
    return state.frame ? `${state.frame.contentType} frame, ${Math.round(state.frame.bytes.length / 1024)} KiB` : 'no frame yet';
  }
  const parts = valueParts(entity, state);
  return parts.length ? parts.join(', ') : 'unknown';
}

export type StateJson = ReturnType<typeof stateJson>;

export function stateJson(entity: Entity, state: EntityState | undefined, now = Date.now()) {
  return {
    id: entity.id,
    kind: entity.kind,
    name: entity.name,
    area: entity.area ?? null,
    floor: entity.floor ?? null,
    /** config | diagnostic: a setting or a diagnostic reading (folded away on the page), else null. */
    category: entity.category ?? null,
    /** Whether agents are shown it (a person's choice, else the default of its category). */
    exposed: entity.exposed !== false,
    unit: entity.unit ?? null,
    deviceClass: entity.deviceClass ?? null,
    value: state?.value ?? null,
    attributes: state?.attributes ?? {},
    available: state?.available ?? null,
    updatedAt: state?.updatedAt ? new Date(state.updatedAt).toISOString() : null,
    // A retained value's age is unknown: when it arrived is only when this process subscribed.
    ageMs: state?.updatedAt && !state.retained ? now - state.updatedAt : null,
    retained: state?.retained ?? false,
    // Stopped answering commands (after a broker failover, or with nothing heard since one): not the same as offline.
    notAnswering: state?.silent
      ? { since: new Date(state.silent.since).toISOString(), cause: state.silent.cause, afterFailover: state.silent.afterFailover }
      : null,
    ...(state?.frame ? { frame: { contentType: state.frame.contentType, bytes: state.frame.bytes.length } } : {}),
  };
}
