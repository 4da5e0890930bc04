// hearth-tool: a host tool the flow implements. When an agent calls it (after
// validation, policy and audit), the arguments come out of the first output
// with msg.toolCall; a hearth-tool-result node answers. Withdrawn calls
// (timeout, interrupted turn) come out of the second output.
import type { FlowToolController } from './lib/flow-tools.js';
import { errorOf, num, str, t, type NodeMessage, type RedApi, type RedNode, type RedNodeDef } from './lib/red.js';
import { bridgeOrSayWhy, showBridgeState, saysNeedsEmbedded } from './lib/shell.js';

// Hearth (dist/) is imported when the node set loads: see hearth-bridge.ts.
export default async function (RED: RedApi): Promise<void> {
  const { FlowToolController: Controller, answerCall, resultFrom } = await import('./lib/flow-tools.js');
  function HearthTool(this: RedNode, def: RedNodeDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    const bridge = bridgeOrSayWhy(RED, node, def, 'once');
    if (!bridge) return;
    if (saysNeedsEmbedded(RED, node, bridge, 'once')) return;
    let waiting = 0;
    let controller: FlowToolController;
    try {
      let parameters: unknown = def.parameters;
      if (typeof parameters === 'string') parameters = parameters.trim() ? JSON.parse(parameters) : { type: 'object', properties: {} };
      const capability = str(def, 'capability') === 'read' ? 'read' : 'actuator';
      controller = new Controller(
        bridge,
        {
          name: str(def, 'toolName'),
          description: str(def, 'description'),
          parameters: (parameters ?? { type: 'object', properties: {} }) as Record<string, unknown>,
          capability,
          timeoutMs: Math.max(1, num(def, 'timeout', 30)) * 1000,
          source: `flow:${node.id}`,
        },
        {
          call: (args, call) => node.send([{ topic: call.name, payload: args, toolCall: call }, null]),
          cancelled: (call, reason) => {
            if (reason !== 'closed') node.send([null, { topic: 'cancelled', payload: { id: call.id, name: call.name, reason }, toolCall: call }]);
          },
          activity: (n) => {
            waiting = n;
            if (n > 0) node.status({ fill: 'blue', shape: 'dot', text: `${n} ${t(RED, 'hearth-tool.status.running', 'running')}` });
            else node.status({ fill: 'green', shape: 'dot', text: `${str(def, 'toolName')} ${t(RED, 'hearth-tool.status.ready', 'ready')}` });
          },
        },
      );
    } catch (err) {
      const message = errorOf(err).message;
      node.status({ fill: 'red', shape: 'ring', text: message.slice(0, 60) });
      node.error(message);
      return;
    }
    const unsubscribe = showBridgeState(RED, node, bridge, () => waiting > 0 || !controller.registered);
    controller.start().then(
      () => {
        if (controller.registered && bridge.state === 'connected') {
          node.status({ fill: 'green', shape: 'dot', text: `${str(def, 'toolName')} ${t(RED, 'hearth-tool.status.ready', 'ready')}` });
        }
      },
      (err: Error) => {
        node.status({ fill: 'red', shape: 'ring', text: err.message.slice(0, 60) });
        node.error(err.message);
      },
    );
    node.on('close', (_removed, done) => {
      unsubscribe();
      controller.close();
      done();
    });
  }
  RED.nodes.registerType('hearth-tool', HearthTool);

  function HearthToolResult(this: RedNode, def: RedNodeDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    node.on('input', (msg: NodeMessage, _send, done) => {
      const call = msg.toolCall as { id?: unknown } | undefined;
      const id = typeof call?.id === 'string' ? call.id : typeof msg.callId === 'string' ? msg.callId : undefined;
      if (!id)
        return done(
          new Error(t(RED, 'hearth-tool.errors.noCall', 'msg.toolCall.id is missing: answer the message a hearth-tool node sent (keep msg.toolCall)')),
        );
      try {
        const result = resultFrom(msg.payload, msg.error);
        answerCall(id, result);
        node.status({
          fill: result.isError ? 'red' : 'green',
          shape: 'dot',
          text: result.isError ? t(RED, 'hearth-tool.status.failed', 'answered: failed') : t(RED, 'hearth-tool.status.answered', 'answered'),
        });
        done();
      } catch (err) {
        node.status({ fill: 'red', shape: 'ring', text: t(RED, 'hearth-tool.status.late', 'no such call') });
        done(errorOf(err));
      }
    });
  }
  RED.nodes.registerType('hearth-tool-result', HearthToolResult);
}
