// `call`: one tool call through the handler pipeline (validation, policy, audit), answered as data.
import type { Hearth } from '../../hearth.js';
import { callResultJson } from '../../present/outcome.js';
import { callerPrincipal } from '../caller.js';
import { notFound } from '../protocol.js';
import type { CallAnswer, CallParams } from '../schema.js';

export async function call(hearth: Hearth, p: CallParams): Promise<CallAnswer> {
  const principal = callerPrincipal((id) => hearth.policy.rolesOf(id), p.as, p.role);
  if (!hearth.tools.get(p.tool)) {
    // Not there (not a bad value): `hearth call` exits with its own code for it.
    throw notFound(
      `no tool ${JSON.stringify(p.tool)}; known: ${hearth.tools
        .all()
        .map((t) => t.name)
        .join(', ')}`,
    );
  }
  const result = await hearth.tools.call(p.tool, p.args ?? {}, principal);
  // What the audit says happened (an unconfirmed call the device confirms later is appended there, not here).
  const auditId = result.details?.auditId;
  const row = typeof auditId === 'number' ? hearth.audit.get(auditId) : undefined;
  return callResultJson(result, { withImage: !!p.image, ...(row ? { row } : {}) });
}
