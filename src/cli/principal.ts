// Who the command line acts as: the user at this machine, an owner, unless --as says otherwise (the same rule
// the daemon applies to its callers), with the flag named in the error.
import type { Hearth } from '../hearth.js';
import type { Principal } from '../tools/types.js';
import { callerPrincipal } from '../daemon/caller.js';
import { CliFailure } from './failure.js';

/** An `--as` that names no principal is bad input, said before anything starts. */
export function checkAs(as: string | undefined, fromEnv = false): void {
  try {
    callerPrincipal(() => [], as);
  } catch (err) {
    throw new CliFailure(`--${(err as Error).message}${fromEnv ? ' (from HEARTH_PRINCIPAL)' : ''}`);
  }
}

export function cliPrincipal(hearth: Hearth, as?: string, roles?: string[]): Principal {
  checkAs(as);
  return callerPrincipal((id) => hearth.policy.rolesOf(id), as, roles);
}
