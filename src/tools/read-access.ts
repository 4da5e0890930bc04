// The one read check every surface asks: may this principal see this
// entity's state? The HTTP API (devices, frames, health, the event stream and
// so the page), MCP resources and subscriptions, Node-RED device nodes and the
// daemon's control endpoint all call it (through Hearth), so a read deny
// cannot stop at some doors. It is asked as the entity's own read tool would
// ask the policy (tool, entity, area, kind and class rules all apply) and
// uses up no rate limit.
import type { Entity } from '../devices/model.js';
import type { DeviceRegistry } from '../devices/registry.js';
import type { PolicyDecision, PolicyEngine, PolicyRequest } from '../policy/types.js';
import type { GeneratedTool, Principal } from './types.js';

export class ReadAccess {
  private toolsSeen?: GeneratedTool[];
  private readToolOf = new Map<string, string>();

  constructor(
    private readonly registry: DeviceRegistry,
    private readonly policy: PolicyEngine,
    private readonly tools: () => GeneratedTool[],
  ) {}

  /** Why this principal may not read this entity; undefined when it may. */
  denied(principal: Principal, entity: Entity): string | undefined {
    const decision = this.decision(principal, entity);
    return decision.effect === 'allow' ? undefined : decision.reason;
  }

  /** The policy's whole answer (for a surface that records a refusal with its rule). */
  decision(principal: Principal, entity: Entity): PolicyDecision {
    const request: PolicyRequest = {
      principal,
      tool: this.readTool(entity.id),
      capability: 'read',
      action: 'read',
      entityId: entity.id,
      area: entity.area,
      kind: entity.kind,
      deviceClass: entity.deviceClass,
      args: {},
    };
    return this.policy.preview ? this.policy.preview(request) : this.policy.decide(request);
  }

  canRead(principal: Principal, entity: Entity): boolean {
    return this.denied(principal, entity) === undefined;
  }

  /** Every entity this principal may read, in registry order. */
  visible(principal: Principal): Entity[] {
    return this.registry.entities().filter((e) => this.canRead(principal, e));
  }

  /** The read tool that stands for this entity (its own, else a grouped one), so tool rules apply. */
  private readTool(entityId: string): string {
    const tools = this.tools();
    if (tools !== this.toolsSeen) {
      // The tool set is replaced, not mutated, when it changes: rebuild the index once per set.
      this.toolsSeen = tools;
      const own = new Map<string, string>();
      const grouped = new Map<string, string>();
      for (const t of tools) {
        if (t.capability !== 'read') continue;
        for (const id of t.meta.entityIds) {
          if (t.meta.entityIds.length === 1) own.set(id, t.name);
          else if (t.name !== 'get_state' && t.name !== 'get_history' && t.name !== 'find_entities' && !grouped.has(id)) grouped.set(id, t.name);
        }
      }
      this.readToolOf = new Map([...grouped, ...own]);
    }
    return this.readToolOf.get(entityId) ?? 'get_state';
  }
}
