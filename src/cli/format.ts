// How states read to a person at a terminal.
import { type Entity, FRAME_KINDS } from '../devices/model.js';
import type { EntityState } from '../devices/state-cache.js';
import { valueParts } from '../tools/state-text.js';

export { formatAge } from '../util/time.js';

export function formatState(entity: Entity, state: EntityState | undefined): string {
  if (!state) return 'unknown';
  if (FRAME_KINDS.has(entity.kind)) {
    return state.frame ? `${state.frame.contentType} frame, ${Math.round(state.frame.bytes.length / 1024)} KiB` : 'no frame yet';
  }
  // The agent's words for the value (colour temperature as kelvin and a name, device text cleaned): one reading everywhere.
  const parts = valueParts(entity, state);
  return parts.length ? parts.join(', ') : 'unknown';
}

export function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ')).join('\n');
}

export function stateJson(entity: Entity, state: EntityState | undefined, now = Date.now()) {
  return {
    id: entity.id,
    kind: entity.kind,
    name: entity.name,
    area: entity.area ?? null,
    unit: entity.unit ?? null,
    deviceClass: entity.deviceClass ?? null,
    value: state?.value ?? null,
    attributes: state?.attributes ?? {},
    available: state?.available ?? null,
    updatedAt: state?.updatedAt ? new Date(state.updatedAt).toISOString() : null,
    // A retained value's age is unknown: when it arrived is only when this process subscribed.
    ageMs: state?.updatedAt && !state.retained ? now - state.updatedAt : null,
    retained: state?.retained ?? false,
    ...(state?.frame ? { frame: { contentType: state.frame.contentType, bytes: state.frame.bytes.length } } : {}),
  };
}
