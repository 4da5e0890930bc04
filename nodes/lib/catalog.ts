// What the editor's pickers offer (entities, areas, kinds, tools with their
// argument schema, principals), from a deployed bridge: an embedded Hearth's
// registry, or what a daemon shows the bridge's token. Served to the editor
// only, behind Node-RED's admin permission (hearth-bridge.ts).
import type { BridgeController } from './bridge.js';
import { actionsOf } from '../../dist/devices/actions.js';
import { isActuator } from '../../dist/devices/model.js';

export interface CatalogEntity {
  id: string;
  name: string;
  kind: string;
  area: string | null;
  /** The tool a hearth-device node calls to act on it, and the actions it offers there (none: it is only read). */
  tool?: string;
  actions?: string[];
}

export interface Catalog {
  entities: CatalogEntity[];
  areas: string[];
  kinds: string[];
  tools: Array<{ name: string; description: string; parameters: Record<string, unknown> }>;
  principals: string[];
  /** Roles the policy knows (principals' roles and the roles its rules name), for roles fields. */
  roles: string[];
  /** Is the bridge connected now (a daemon's event stream open, an embedded broker connection up)? */
  connected: boolean;
}

type Known = { principals: Array<{ id: string; roles?: string[] }>; rules: Array<{ subject: string }> };
/** A daemon's GET /api/controls: per entity its actuator tool and actions. */
type Controls = { controls: Record<string, { tool: string; actions: Record<string, unknown> }> };

function finish(entities: Catalog['entities'], tools: Catalog['tools'], known: Known, connected: boolean): Catalog {
  const uniq = (xs: Array<string | null | undefined>) => [...new Set(xs.filter((x): x is string => !!x))].sort();
  const roles = uniq([
    ...known.principals.flatMap((p) => p.roles ?? []),
    ...known.rules.map((r) => (r.subject.startsWith('role:') ? r.subject.slice(5) : undefined)),
  ]);
  return {
    entities,
    areas: uniq(entities.map((e) => e.area)),
    kinds: uniq(entities.map((e) => e.kind)),
    tools,
    principals: uniq(known.principals.map((p) => p.id)),
    roles,
    connected,
  };
}

export async function catalogOf(bridge: BridgeController): Promise<Catalog> {
  if (bridge.daemon) {
    const daemon = bridge.daemon;
    const [states, tools, controls] = await Promise.all([
      daemon.stateFeed().snapshot(),
      daemon.tools(),
      // Each entity's tool and actions (a grouped tool's schema does not say which entity offers which).
      daemon.request<Controls>('GET', '/api/controls').then(
        (r) => r.controls ?? {},
        () => ({}) as Controls['controls'],
      ),
    ]);
    // The rules (and so the principals) are for owner tokens; without that, the token's own principal.
    const known = await daemon
      .request<Known>('GET', '/api/policy/rules')
      .then((r) => ({ principals: r.principals ?? [], rules: r.rules ?? [] }))
      .catch((): Known => ({ principals: daemon.principal ? [{ id: daemon.principal }] : [], rules: [] }));
    return finish(
      states.map((s) => {
        const c = controls[s.id];
        return { id: s.id, name: s.name, kind: s.kind, area: s.area ?? null, ...(c ? { tool: c.tool, actions: Object.keys(c.actions ?? {}) } : {}) };
      }),
      tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters })),
      known,
      bridge.state === 'connected',
    );
  }
  const hearth = await bridge.ready();
  return finish(
    hearth.bridge.registry.entities().map((e) => {
      const tool = isActuator(e) ? hearth.tools.all().find((t) => t.capability === 'actuator' && !t.meta.group && t.meta.entityIds.includes(e.id)) : undefined;
      return { id: e.id, name: e.name, kind: e.kind, area: e.area ?? null, ...(tool ? { tool: tool.name, actions: actionsOf(e) } : {}) };
    }),
    hearth.tools.all().map((t) => ({ name: t.name, description: t.description, parameters: t.parameters })),
    { principals: hearth.policy.listPrincipals(), rules: hearth.policy.list() },
    bridge.state === 'connected',
  );
}
