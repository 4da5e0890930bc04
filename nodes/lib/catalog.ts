// What the editor's pickers offer (entities, areas, kinds, tools with their
// argument schema, principals), from a deployed bridge: an embedded Hearth's
// registry, or what a daemon shows the bridge's token. Served to the editor
// only, behind Node-RED's admin permission (hearth-bridge.ts).
import type { BridgeController } from './bridge.js';

export interface Catalog {
  entities: Array<{ id: string; name: string; kind: string; area: string | null }>;
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
    const [states, tools] = await Promise.all([daemon.stateFeed().snapshot(), daemon.tools()]);
    // The rules (and so the principals) are for owner tokens; without that, the token's own principal.
    const known = await daemon
      .request<Known>('GET', '/api/policy/rules')
      .then((r) => ({ principals: r.principals ?? [], rules: r.rules ?? [] }))
      .catch((): Known => ({ principals: daemon.principal ? [{ id: daemon.principal }] : [], rules: [] }));
    return finish(
      states.map((s) => ({ id: s.id, name: s.name, kind: s.kind, area: s.area ?? null })),
      tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters })),
      known,
      bridge.state === 'connected',
    );
  }
  const hearth = await bridge.ready();
  return finish(
    hearth.bridge.registry.entities().map((e) => ({ id: e.id, name: e.name, kind: e.kind, area: e.area ?? null })),
    hearth.tools.all().map((t) => ({ name: t.name, description: t.description, parameters: t.parameters })),
    { principals: hearth.policy.listPrincipals(), rules: hearth.policy.list() },
    bridge.state === 'connected',
  );
}
