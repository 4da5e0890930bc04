// hearth-state: fires when a selected entity's state changes (entity, area or
// kind globs; to/from, for N seconds, ignore unavailable), as the node's
// principal flow:<node id> may read it: a read-denied entity never fires.
import { errorOf, list, num, str, bool, t, type RedApi, type RedNode, type RedNodeDef } from './lib/red.js';
import { bridgeOrSayWhy, showBridgeState } from './lib/shell.js';
import { StateTrigger, type StateChange } from './lib/state.js';

/** The message a change becomes. */
export function changeMessage(c: StateChange): Record<string, unknown> {
  return {
    topic: c.entity.id,
    payload: c.newState.value,
    entity: c.entity,
    data: { new_state: c.newState, old_state: c.oldState, age: c.ageMs, old_for: c.oldForMs, initial: c.initial },
  };
}

export default function (RED: RedApi): void {
  function HearthState(this: RedNode, def: RedNodeDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    const bridge = bridgeOrSayWhy(RED, node, def, 'once');
    if (!bridge) return;
    const principal = { id: `flow:${node.id}`, roles: list(str(def, 'roles')) };
    let lastFired: string | undefined;
    const trigger = new StateTrigger(
      {
        entity: str(def, 'entity'),
        area: str(def, 'area'),
        kind: str(def, 'kind'),
        to: str(def, 'to'),
        from: str(def, 'from'),
        forMs: Math.max(0, num(def, 'for', 0)) * 1000,
        ignoreUnavailable: bool(def, 'ignoreUnavailable', true),
        outputInitially: bool(def, 'outputInitially', false),
      },
      (change) => {
        lastFired = `${change.entity.id}: ${String(change.newState.value).slice(0, 30)}`;
        node.status({ fill: 'green', shape: 'dot', text: lastFired });
        node.send(changeMessage(change));
      },
    );
    const unsubscribe = showBridgeState(RED, node, bridge, () => lastFired !== undefined);
    let closed = false;
    bridge
      .stateFeed(principal)
      .then(
        (feed) => (closed ? undefined : trigger.start(feed)),
        (err: Error) => node.error(err.message),
      )
      .then(
        () => {
          if (!closed && trigger.following === 0) {
            node.status({ fill: 'yellow', shape: 'ring', text: t(RED, 'hearth-state.status.none', 'no entity this node may read matches') });
          }
        },
        (err: unknown) => node.error(errorOf(err).message),
      );
    node.on('close', (_removed, done) => {
      closed = true;
      unsubscribe();
      trigger.stop();
      done();
    });
  }
  RED.nodes.registerType('hearth-state', HearthState);
}
