// hearth-tool: a host tool the flow implements. When an agent calls it (after
// validation, policy and audit), the arguments come out of the first output
// with msg.toolCall; a hearth-tool-result node answers. Withdrawn calls
// (timeout, interrupted turn, a dropped daemon) come out of the second output.
// On an embedded bridge the tool joins that Hearth's tools; on a bridge
// connected to a daemon it is provided to the daemon over a stream
// (lib/remote-flow-tools.ts), so the daemon's agent, CLI, MCP and page see it.
import type { FlowToolController, FlowToolHooks, FlowToolSettings } from './lib/flow-tools.js';
import type { RemoteFlowTool } from './lib/remote-flow-tools.js';
import { errorOf, num, str, t, type NodeMessage, type RedApi, type RedNode, type RedNodeDef } from './lib/red.js';
import { bridgeOrSayWhy, showBridgeState } from './lib/shell.js';

// Hearth (dist/) is imported when the node set loads: see hearth-bridge.ts.
export default async function (RED: RedApi): Promise<void> {
  const { FlowToolController: Controller, answerCall, resultFrom } = await import('./lib/flow-tools.js');
  const { RemoteFlowTool: Remote, answerRemoteCall, isRemoteCall } = await import('./lib/remote-flow-tools.js');
  function HearthTool(this: RedNode, def: RedNodeDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    const bridge = bridgeOrSayWhy(RED, node, def, 'once');
    if (!bridge) return;
    let waiting = 0;
    let refused: string | undefined;
    let controller: FlowToolController | RemoteFlowTool;
    const ready = () => node.status({ fill: 'green', shape: 'dot', text: `${str(def, 'toolName')} ${t(RED, 'hearth-tool.status.ready', 'ready')}` });
    try {
      let parameters: unknown = def.parameters;
      if (typeof parameters === 'string') parameters = parameters.trim() ? JSON.parse(parameters) : { type: 'object', properties: {} };
      const capability = str(def, 'capability') === 'read' ? 'read' : 'actuator';
      const settings: FlowToolSettings = {
        name: str(def, 'toolName'),
        description: str(def, 'description'),
        parameters: (parameters ?? { type: 'object', properties: {} }) as Record<string, unknown>,
        capability,
        timeoutMs: Math.max(1, num(def, 'timeout', 30)) * 1000,
        source: `flow:${node.id}`,
      };
      const hooks: FlowToolHooks = {
        call: (args, call) => node.send([{ topic: call.name, payload: args, toolCall: call }, null]),
        cancelled: (call, reason) => {
          if (reason !== 'closed') node.send([null, { topic: 'cancelled', payload: { id: call.id, name: call.name, reason }, toolCall: call }]);
        },
        activity: (n) => {
          waiting = n;
          if (refused || !controller?.registered) return;
          if (n > 0) node.status({ fill: 'blue', shape: 'dot', text: `${n} ${t(RED, 'hearth-tool.status.running', 'running')}` });
          else ready();
        },
      };
      controller = bridge.daemon
        ? new Remote(bridge.daemon, settings, {
            ...hooks,
            state: (state, detail) => {
              if (state === 'ready') {
                refused = undefined;
                ready();
              } else if (state === 'refused') {
                // The daemon said no (a token that may not provide tools, a name another flow or a device holds): say why, once.
                refused = detail ?? 'refused';
                node.status({ fill: 'red', shape: 'dot', text: refused.slice(0, 60) });
                node.error(refused);
              } else if (state === 'retrying') {
                node.status({ fill: 'yellow', shape: 'ring', text: (detail ?? t(RED, 'common.status.disconnected', 'disconnected')).slice(0, 60) });
              }
            },
          })
        : new Controller(bridge, settings, hooks);
    } catch (err) {
      const message = errorOf(err).message;
      node.status({ fill: 'red', shape: 'ring', text: message.slice(0, 60) });
      node.error(message);
      return;
    }
    const tool = controller;
    const unsubscribe = showBridgeState(RED, node, bridge, () => waiting > 0 || !tool.registered || !!refused);
    tool.start().then(
      () => {
        if (tool.registered && !refused && (bridge.daemon || bridge.state === 'connected')) ready();
      },
      (err: Error) => {
        node.status({ fill: 'red', shape: 'ring', text: err.message.slice(0, 60) });
        node.error(err.message);
      },
    );
    node.on('close', (_removed, done) => {
      unsubscribe();
      tool.close();
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
      const result = resultFrom(msg.payload, msg.error);
      const answered = () =>
        node.status({
          fill: result.isError ? 'red' : 'green',
          shape: 'dot',
          text: result.isError ? t(RED, 'hearth-tool.status.failed', 'answered: failed') : t(RED, 'hearth-tool.status.answered', 'answered'),
        });
      const late = (err: unknown) => {
        node.status({ fill: 'red', shape: 'ring', text: t(RED, 'hearth-tool.status.late', 'no such call') });
        done(errorOf(err));
      };
      // A call a daemon sent is answered over HTTP; the daemon says when it no longer waits.
      if (isRemoteCall(id)) {
        answerRemoteCall(id, result).then(() => {
          answered();
          done();
        }, late);
        return;
      }
      try {
        answerCall(id, result);
        answered();
        done();
      } catch (err) {
        late(err);
      }
    });
  }
  RED.nodes.registerType('hearth-tool-result', HearthToolResult);
}
