// A call a confirm rule held, asked about in the MCP client (elicitation/create)
// when the client said it can ask its user. The person at the client answers
// as the session's principal, so the answer counts only when that principal
// may approve the call: the same approver check as the page and the CLI
// (policy.mayApprove, through decidesApproval), and the same store: a yes
// grants the stored approval (the retried call then uses it up), a no from an
// approver denies it (an audit row). A principal that may not approve is not
// asked at all (mayBeAsked); should roles change meanwhile, its answer still
// leaves the approval waiting.
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import type { Hearth } from '../hearth.js';
import { decidesApproval } from '../http/api-approvals.js';
import type { Logger } from '../log.js';
import { notDecidableText } from '../present/approval.js';
import { quoted } from '../tools/device-text.js';
import type { Principal } from '../tools/types.js';

export type ApprovalAnswer =
  /** Granted: make the call again, it goes through once. */
  | { kind: 'granted' }
  /** Nothing changed or the call was refused: add this to the held result's text. */
  | { kind: 'held' | 'refused'; note: string };

/** Whether this principal may decide the approval: only then is its person asked (others get the held result at once). */
export function mayBeAsked(hearth: Hearth, principal: Principal, approvalId: string): boolean {
  const approval = hearth.approvals.get(approvalId);
  return !!approval && approval.status === 'pending' && decidesApproval(hearth, principal, approval);
}

/** Whether this session's client can be asked (form elicitation). */
export function canElicit(server: Server): boolean {
  return !!server.getClientCapabilities()?.elicitation?.form;
}

export async function askForApproval(options: {
  server: Server;
  hearth: Hearth;
  principal: Principal;
  approvalId: string;
  log: Logger;
  relatedRequestId?: string | number;
  signal?: AbortSignal;
}): Promise<ApprovalAnswer> {
  const { server, hearth, principal, approvalId, log } = options;
  const approval = hearth.approvals.get(approvalId);
  if (approval?.status !== 'pending') return { kind: 'held', note: '' };
  const entity = approval.entityId ? hearth.bridge.registry.entity(approval.entityId) : undefined;
  const what = entity ? `${approval.tool} on ${quoted(entity.name)} (${entity.id})` : approval.tool;
  const minutes = Math.max(1, Math.round((approval.expiresAt - Date.now()) / 60_000));
  let answer: ElicitResult;
  try {
    answer = await server.elicitInput(
      {
        mode: 'form',
        message:
          `${approval.principal} asks to run ${what} with ${JSON.stringify(approval.args)}: ${approval.reason}. ` +
          `Approve this one call? (approval ${approval.id}; it waits ${minutes} min)`,
        requestedSchema: {
          type: 'object',
          properties: {
            approve: { type: 'boolean', title: 'Approve', description: 'Yes: the call runs once, now. No: it is refused.' },
          },
          required: ['approve'],
        },
      },
      { relatedRequestId: options.relatedRequestId, signal: options.signal, timeout: Math.max(1000, approval.expiresAt - Date.now()) },
    );
  } catch (err) {
    log.debug({ err, approvalId }, 'MCP elicitation for an approval got no answer');
    return { kind: 'held', note: '' };
  }
  if (answer.action === 'cancel') return { kind: 'held', note: ' The question in the client was dismissed.' };
  const yes = answer.action === 'accept' && answer.content?.approve === true;
  if (!decidesApproval(hearth, principal, approval)) {
    return {
      kind: 'held',
      note: ` The ${yes ? 'yes' : 'no'} given in the client does not count: ${principal.id} may not approve this call; approval ${approval.id} still waits for someone who may.`,
    };
  }
  const done = yes ? hearth.approvals.grant(approval.id, principal.id) : hearth.approvals.deny(approval.id, principal.id);
  if (!done) {
    const after = hearth.approvals.get(approval.id);
    return { kind: 'held', note: after?.refused ? ` ${notDecidableText(after)}.` : ` Approval ${approval.id} was decided or expired meanwhile.` };
  }
  log.info({ approvalId: approval.id, by: principal.id, granted: yes }, 'approval decided in the MCP client');
  return yes ? { kind: 'granted' } : { kind: 'refused', note: `not done: ${principal.id} refused approval ${approval.id} in the client.` };
}
