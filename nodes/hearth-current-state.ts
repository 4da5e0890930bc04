// hearth-current-state: on each message, read one entity's state now (as
// flow:<node id> may read it) and send the message out of output 1 when the
// condition holds (is / is not / above / below), else out of output 2.
import { errorOf, list, str, t, type NodeMessage, type RedApi, type RedNode, type RedNodeDef } from './lib/red.js';
import { bridgeOrSayWhy, showBridgeState } from './lib/shell.js';
import { COMPARISONS, condition, currentState, type Comparison } from './lib/state.js';

export default function (RED: RedApi): void {
  function HearthCurrentState(this: RedNode, def: RedNodeDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    const bridge = bridgeOrSayWhy(RED, node, def, 'input');
    if (!bridge) return;
    const principal = { id: `flow:${node.id}`, roles: list(str(def, 'roles')) };
    // No op (a flow from before it) is `is`; an op the node does not know ("is not") is an error, not a silent `is`.
    const op = (str(def, 'op') || 'is') as Comparison;
    let test: ((v: unknown) => boolean) | undefined;
    let problem: string | undefined;
    try {
      if (!COMPARISONS.includes(op)) throw new Error(`${JSON.stringify(op)} is not a comparison; one of ${COMPARISONS.join(', ')}`);
      test = condition(op, str(def, 'value'));
    } catch (err) {
      problem = `${t(RED, 'hearth-current-state.errors.condition', 'the condition is not valid')}: ${errorOf(err).message}`;
      node.error(problem);
    }
    let busy = 0;
    const unsubscribe = showBridgeState(RED, node, bridge, () => busy > 0);
    node.on('input', async (msg: NodeMessage, send, done) => {
      try {
        if (problem || !test) throw new Error(problem);
        const entity = typeof msg.entity === 'string' && msg.entity ? msg.entity : str(def, 'entity');
        if (!entity) throw new Error(t(RED, 'hearth-current-state.errors.noEntity', 'no entity: set one in the node or in msg.entity'));
        const state = await currentState(await bridge.stateFeed(principal), entity);
        const holds = test(state.value);
        busy = 1;
        node.status({ fill: holds ? 'green' : 'grey', shape: 'dot', text: `${state.id}: ${String(state.value).slice(0, 30)}` });
        msg.payload = state.value;
        msg.data = state;
        send(holds ? [msg, null] : [null, msg]);
        done();
      } catch (err) {
        node.status({ fill: 'red', shape: 'ring', text: errorOf(err).message.slice(0, 60) });
        done(errorOf(err));
      }
    });
    node.on('close', (_removed, done) => {
      unsubscribe();
      done();
    });
  }
  RED.nodes.registerType('hearth-current-state', HearthCurrentState);
}
