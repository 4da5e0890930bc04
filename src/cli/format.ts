// How states read to a person at a terminal.
import { COLOR_ATTRIBUTES, nearestColorName } from '../devices/color.js';
import type { Entity } from '../devices/model.js';
import type { EntityState } from '../devices/state-cache.js';

export { formatAge } from '../util/time.js';

export function formatState(entity: Entity, state: EntityState | undefined): string {
  if (!state) return 'unknown';
  if (entity.kind === 'camera') {
    return state.frame ? `${state.frame.contentType} frame, ${Math.round(state.frame.bytes.length / 1024)} KiB` : 'no frame yet';
  }
  const parts: string[] = [];
  if (state.value !== undefined && state.value !== null) parts.push(`${state.value}${entity.unit && typeof state.value === 'number' ? ` ${entity.unit}` : ''}`);
  const color = entity.kind === 'light' ? nearestColorName(state.attributes) : undefined;
  for (const [k, v] of Object.entries(state.attributes)) {
    if (v === null || (color && COLOR_ATTRIBUTES.has(k))) continue;
    const unit = (k === 'temperature' || k === 'current_temperature') && entity.unit ? ` ${entity.unit}` : '';
    parts.push(`${k.replace(/_/g, ' ')} ${v}${unit}`);
  }
  if (color) parts.push(`colour ~${color}`);
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
