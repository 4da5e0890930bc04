// What a refused call's caller is told to do about it (issue 41's first hour): the permission that is missing,
// and, to a principal who may add it (an owner), the command that adds it and where on the page; to anyone else,
// to ask an owner. Appended to a deny's reason by the pipeline, so chat, voice, MCP, /v1 and the page say it.
import type { PolicyDecision, PolicyRequest } from './types.js';
import { shellWord } from '../util/shell-word.js';

export function missingPermission(request: Pick<PolicyRequest, 'principal' | 'action' | 'entityId' | 'tool'>, decision: PolicyDecision): string {
  const owner = request.principal.roles.includes('owner');
  const target = request.entityId ? `--entity ${shellWord(request.entityId)}` : `--tool ${shellWord(request.tool)}`;
  const action = request.action === 'read' ? 'read' : request.action || 'actuate';
  // The built-in deny of actuators (priority -100) is the default said as a rule: any allow outranks it.
  const byDefault = decision.ruleId === null || /built-in: actuators are denied unless a rule allows them/.test(decision.reason);
  if (!byDefault) {
    return owner
      ? `To change it: hearth policy remove ${decision.ruleId}, or a rule of higher priority (the page's Policy tab shows the rules).`
      : 'Ask an owner of this home if it should be allowed.';
  }
  return owner
    ? `To allow it: hearth policy allow role:owner ${target} --action ${shellWord(action)} (or add the rule on the page's Policy tab).`
    : `Ask an owner of this home to allow it (hearth policy allow ${shellWord(request.principal.id)} ${target} --action ${shellWord(action)}).`;
}
