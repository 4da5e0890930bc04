// Who a control request acts as. The control endpoint is the user's own (a 0600 socket, or a token in a 0600
// file), so the person asking is this machine's user, an owner, unless the request names another principal.
import { userInfo } from 'node:os';
import { PRINCIPAL_EXAMPLES, PRINCIPAL_ID, type Principal } from '../core/principal.js';
import { badParams } from './protocol.js';

/** `cli:<os user>`: the person at this machine. */
export function localUser(): string {
  let name = 'local';
  try {
    name = userInfo().username || 'local';
  } catch {
    // no passwd entry (containers)
  }
  return `cli:${name.replace(/[^A-Za-z0-9_.@-]/g, '_')}`;
}

/** The caller: the local user (an owner unless roles are given), or the principal `as` names with its stored roles. */
export function callerPrincipal(rolesOf: (id: string) => string[], as?: string, roles?: string[]): Principal {
  if (!as) return { id: localUser(), roles: roles ?? ['owner'] };
  if (!PRINCIPAL_ID.test(as)) throw badParams(`as ${JSON.stringify(as)}: a principal looks like ${PRINCIPAL_EXAMPLES}`);
  return { id: as, roles: roles ?? rolesOf(as) };
}
