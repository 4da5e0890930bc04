// Who the command line acts as: the user at this machine, an owner, unless --as says otherwise.
import { userInfo } from 'node:os';
import type { Hearth } from '../hearth.js';
import type { Principal } from '../tools/types.js';

const PRINCIPAL_RE = /^(voice|chat|flow|mcp|cli|http|agent):[A-Za-z0-9_.@:-]{1,100}$/;

export function cliPrincipal(hearth: Hearth, as?: string, roles?: string[]): Principal {
  if (!as) {
    let name = 'local';
    try {
      name = userInfo().username || 'local';
    } catch {
      // no passwd entry (containers)
    }
    const id = `cli:${name.replace(/[^A-Za-z0-9_.@-]/g, '_')}`;
    return { id, roles: roles ?? ['owner'] };
  }
  if (!PRINCIPAL_RE.test(as)) {
    throw new Error(`--as ${JSON.stringify(as)}: a principal looks like voice:kitchen, chat:alice, flow:<node id>, mcp:<token name> or cli:<user>`);
  }
  return { id: as, roles: roles ?? hearth.policy.rolesOf(as) };
}
