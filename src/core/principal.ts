// Who is asking, and what kind of tool a call uses: shared by the policy, the
// audit, the tools and every front door, so it lives below all of them.

/** Who is asking: `voice:kitchen`, `chat:alice`, `flow:<node id>`, `http:<token name>`, `mcp:<client>`, `cli:<user>`. */
export interface Principal {
  id: string;
  roles: string[];
  /** Where it speaks from (a kitchen satellite, a hallway tablet's token): policy rules may name it (from_area). */
  area?: string;
}

/** A tool reads the home or acts on it. */
export type Capability = 'read' | 'actuator';

/** What a principal id looks like: a door's prefix and a name. */
export const PRINCIPAL_ID = /^(voice|chat|flow|mcp|cli|http|agent):[A-Za-z0-9_.@:-]{1,100}$/;
export const PRINCIPAL_EXAMPLES = 'voice:kitchen, chat:alice, flow:<node id>, http:<token name>, mcp:<client> or cli:<user>';
