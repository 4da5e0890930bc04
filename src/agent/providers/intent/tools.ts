// Which offered tool covers an entity, and its arguments in that tool's shape:
// per-entity tools take `{action, ...}`, grouped ones `{entity, action, ...}`,
// per-entity reads `{}`, `get_state {entity | area}`, `get_camera_image {camera}`.
// Only tools the request offers are ever chosen.
import type { Entity } from '../../../devices/model.js';
import type { GeneratedTool } from '../../../tools/types.js';

export const TOOL_PREFIX = 'host__';

export interface PlannedCall {
  /** The tool's own name (without `host__`). */
  tool: string;
  args: Record<string, unknown>;
}

/** The tools a request offers, in the request's order. */
/**
 * A tool as the request offers it: where its schema's entity enum names fewer entities than the tool covers
 * (the caller may not read the rest), only those.
 */
function asOffered(tool: GeneratedTool, schema: unknown): GeneratedTool {
  const props = (schema as { properties?: Record<string, { enum?: unknown[] }> } | undefined)?.properties;
  const listed = props?.entity?.enum ?? props?.camera?.enum;
  if (!Array.isArray(listed) || tool.meta.entityIds.length < 2) return tool;
  const keep = new Set(listed);
  const entityIds = tool.meta.entityIds.filter((id) => keep.has(id));
  return entityIds.length === tool.meta.entityIds.length ? tool : { ...tool, meta: { ...tool.meta, entityIds } };
}

export class OfferedTools {
  readonly list: GeneratedTool[];
  private readonly byName: Map<string, GeneratedTool>;

  constructor(requestNames: string[], all: GeneratedTool[], schemas?: ReadonlyMap<string, unknown>) {
    const known = new Map(all.map((t) => [t.name, t]));
    this.list = [];
    for (const n of requestNames) {
      const tool = known.get(n.startsWith(TOOL_PREFIX) ? n.slice(TOOL_PREFIX.length) : n);
      if (tool && !this.list.some((t) => t.name === tool.name)) this.list.push(asOffered(tool, schemas?.get(n)));
    }
    this.byName = new Map(this.list.map((t) => [t.name, t]));
  }

  get(name: string): GeneratedTool | undefined {
    return this.byName.get(name);
  }

  /** A control tool for this entity that takes this action (a per-entity tool first). */
  actuator(entity: Entity, action: string | undefined): GeneratedTool | undefined {
    const fits = this.list.filter(
      (t) =>
        t.capability === 'actuator' &&
        !t.meta.group &&
        t.meta.entityIds.includes(entity.id) &&
        (action === undefined || t.meta.actions.length === 0 || t.meta.actions.includes(action)),
    );
    return fits.find((t) => !props(t).has('entity')) ?? fits.find((t) => props(t).has('entity'));
  }

  /** The call that controls `entity`, or undefined when no offered tool can. */
  control(entity: Entity, action: string | undefined, extra: Record<string, unknown> = {}): PlannedCall | undefined {
    const tool = this.actuator(entity, action);
    if (!tool) return undefined;
    const p = props(tool);
    const args: Record<string, unknown> = {};
    if (p.has('entity')) args.entity = entity.id;
    if (action !== undefined && p.has('action')) args.action = action;
    for (const [k, v] of Object.entries(extra)) {
      if (v === undefined) continue;
      if (!p.has(k)) return undefined;
      args[k] = v;
    }
    return { tool: tool.name, args };
  }

  /** Read one entity: its own read tool, else get_state. */
  read(entity: Entity): PlannedCall | undefined {
    if (entity.kind === 'camera') return this.camera(entity);
    const own = this.list.find(
      (t) => t.capability === 'read' && t.name !== 'get_state' && t.meta.entityIds.length === 1 && t.meta.entityIds[0] === entity.id && props(t).size === 0,
    );
    if (own) return { tool: own.name, args: {} };
    const state = this.getState();
    return state?.meta.entityIds.includes(entity.id) ? { tool: state.name, args: { entity: entity.id } } : undefined;
  }

  /** A camera's latest frame. */
  camera(entity: Entity): PlannedCall | undefined {
    for (const t of this.list) {
      if (t.capability !== 'read' || !t.meta.kinds.includes('camera') || !t.meta.entityIds.includes(entity.id)) continue;
      const p = props(t);
      if (p.size === 0 && t.meta.entityIds.length === 1) return { tool: t.name, args: {} };
      if (p.has('camera')) return { tool: t.name, args: { camera: entity.id } };
    }
    return undefined;
  }

  getState(): GeneratedTool | undefined {
    return this.byName.get('get_state');
  }

  /** get_state for an area, or for everything. */
  state(area?: string): PlannedCall | undefined {
    const t = this.getState();
    if (!t) return undefined;
    return { tool: t.name, args: area ? { area } : {} };
  }
}

function props(tool: GeneratedTool): Set<string> {
  const p = (tool.parameters as { properties?: Record<string, unknown> }).properties;
  return new Set(p ? Object.keys(p) : []);
}

/** A percentage onto a range, snapped to its step. */
export function scaleToRange(percent: number, range: { min: number; max: number; step?: number }): number {
  const raw = range.min + (percent / 100) * (range.max - range.min);
  return snap(raw, range);
}

/** A value snapped to the range's step (from its minimum) and kept inside it. */
export function snap(value: number, range: { min: number; max: number; step?: number }): number {
  const integral = Number.isInteger(range.min) && Number.isInteger(range.max);
  const step = range.step && range.step > 0 ? range.step : integral ? 1 : 0;
  let v = step ? range.min + Math.round((value - range.min) / step) * step : value;
  v = Math.min(range.max, Math.max(range.min, v));
  // Avoid 20.500000000001.
  const decimals = step ? (String(step).split('.')[1] ?? '').length : 6;
  return Number(v.toFixed(Math.min(6, decimals)));
}
