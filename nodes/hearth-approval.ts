// hearth-approval: what waits for a person comes out of the first output
// (permission requests of sessions, confirm-policy holds); decisions go in
// (allow_once | allow_always | deny with the request id) and their outcome
// comes out of the second output.
import { DECISIONS, type ApprovalOutcome, type ApprovalRequest, type Decision } from './lib/approvals.js';
import { bool, errorOf, t, type NodeMessage, type RedApi, type RedNode, type RedNodeDef } from './lib/red.js';
import { bridgeOrSayWhy, bridgeStatus, showBridgeState } from './lib/shell.js';

const ALIASES: Record<string, Decision> = {
  allow_once: 'allow_once',
  allow: 'allow_once',
  approve: 'allow_once',
  grant: 'allow_once',
  yes: 'allow_once',
  allow_always: 'allow_always',
  always: 'allow_always',
  deny: 'deny',
  reject: 'deny',
  no: 'deny',
};

/** The decision and the id a message carries, or a description of what is wrong. */
export function decisionOf(msg: NodeMessage): { id: string; decision: Decision } | string {
  let decision: unknown = msg.payload;
  let id: unknown = msg.requestId ?? msg.id;
  if (msg.payload && typeof msg.payload === 'object' && !Array.isArray(msg.payload)) {
    const p = msg.payload as Record<string, unknown>;
    decision = p.decision;
    id = p.id ?? p.requestId ?? id;
  }
  const d = typeof decision === 'string' ? ALIASES[decision.trim().toLowerCase()] : undefined;
  if (!d) return `msg.payload must be one of ${DECISIONS.join(', ')} (or {id, decision}), got ${JSON.stringify(decision)?.slice(0, 60)}`;
  if (typeof id !== 'string' || !id.trim()) return 'msg.requestId must be the id of the request to decide (from msg.payload.id of the request)';
  return { id: id.trim(), decision: d };
}

export default function (RED: RedApi): void {
  function HearthApproval(this: RedNode, def: RedNodeDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    const bridge = bridgeOrSayWhy(RED, node, def, 'input');
    if (!bridge) return;
    const sendDecided = bool(def, 'sendDecided', true);
    let hubRef: { pending(): ApprovalRequest[] } | undefined;
    const waitingNow = () => hubRef?.pending().length ?? 0;
    const by = `flow:${node.id}`;
    const show = () => {
      const waiting = waitingNow();
      if (waiting > 0) node.status({ fill: 'yellow', shape: 'ring', text: `${waiting} ${t(RED, 'hearth-approval.status.waiting', 'waiting')}` });
      else node.status(bridgeStatus(RED, bridge.state, bridge.error));
    };
    const unsubscribe = showBridgeState(RED, node, bridge, () => waitingNow() > 0);
    let detach: (() => void) | undefined;
    let closed = false;

    const onRequested = (request: ApprovalRequest) => {
      show();
      node.send([{ topic: 'requested', payload: request, requestId: request.id }, null]);
    };
    const onDecided = (outcome: ApprovalOutcome) => {
      show();
      if (sendDecided) {
        const { request, ...rest } = outcome;
        node.send([{ topic: 'decided', payload: { ...rest, tool: request?.tool, principal: request?.principal }, requestId: outcome.id }, null]);
      }
    };

    const hubReady = bridge.approvalHub().then(
      (hub) => {
        if (closed) return hub;
        hubRef = hub;
        detach = hub.attach();
        hub.on('requested', onRequested);
        hub.on('decided', onDecided);
        // What already waits when this node starts.
        for (const r of hub.pending()) onRequested(r);
        return hub;
      },
      (err: Error) => {
        node.error(err.message);
        throw err;
      },
    );
    hubReady.catch(() => undefined);

    node.on('input', async (msg: NodeMessage, send, done) => {
      try {
        const hub = await hubReady;
        if (msg.payload === 'list' || msg.topic === 'list') {
          msg.payload = hub.pending();
          send([null, msg]);
          return done();
        }
        const d = decisionOf(msg);
        if (typeof d === 'string') return done(new Error(d));
        const outcome = await hub.decide(d.id, d.decision, by);
        const { request, ...rest } = outcome;
        msg.payload = { ...rest, tool: request?.tool, principal: request?.principal, args: request?.args };
        msg.requestId = d.id;
        send([null, msg]);
        done();
      } catch (err) {
        done(errorOf(err));
      }
    });

    node.on('close', (_removed, done) => {
      closed = true;
      unsubscribe();
      detach?.();
      hubReady.then(
        (hub) => {
          hub.off('requested', onRequested);
          hub.off('decided', onDecided);
          done();
        },
        () => done(),
      );
    });
  }
  RED.nodes.registerType('hearth-approval', HearthApproval);
}
