// What every node shell shares: finding its bridge and showing the bridge's
// connection as the node's status.
import type { BridgeController, BridgeState } from './bridge.js';
import { str, t, type NodeStatus, type RedApi, type RedNode, type RedNodeDef } from './red.js';

/** A hearth-bridge config node as other nodes see it. */
export interface HearthBridgeNode extends RedNode {
  controller: BridgeController;
}

/** The bridge a node's `bridge` setting names, or undefined. */
export function bridgeOf(RED: RedApi, def: RedNodeDef): BridgeController | undefined {
  const id = str(def, 'bridge');
  const node = id ? (RED.nodes.getNode(id) as HearthBridgeNode | null) : null;
  return node?.controller;
}

export function bridgeStatus(RED: RedApi, state: BridgeState, detail?: string): NodeStatus {
  switch (state) {
    case 'starting':
      return { fill: 'grey', shape: 'ring', text: t(RED, 'common.status.starting', 'starting') };
    case 'connected':
      return { fill: 'green', shape: 'dot', text: t(RED, 'common.status.connected', 'connected') };
    case 'disconnected':
      return { fill: 'red', shape: 'ring', text: t(RED, 'common.status.disconnected', 'disconnected') };
    case 'error':
      return { fill: 'red', shape: 'dot', text: `${t(RED, 'common.status.error', 'error')}: ${(detail ?? '').slice(0, 60)}` };
    case 'closed':
      return { fill: 'grey', shape: 'ring', text: t(RED, 'common.status.closed', 'closed') };
  }
}

/**
 * Show the bridge's connection on a node, except while `busy()` says the node
 * shows something of its own (a disconnection is always shown). Returns the
 * unsubscribe.
 */
export function showBridgeState(RED: RedApi, node: RedNode, bridge: BridgeController, busy: () => boolean = () => false): () => void {
  const listener = (state: BridgeState, detail?: string) => {
    if (busy() && state === 'connected') return;
    node.status(bridgeStatus(RED, state, detail ?? bridge.error));
  };
  bridge.on('state', listener);
  listener(bridge.state);
  return () => bridge.off('state', listener);
}

/** The status and error of a node whose bridge is not set. */
export function noBridge(RED: RedApi, node: RedNode): Error {
  const text = t(RED, 'common.errors.noBridge', 'no hearth-bridge configured: choose one in the node');
  node.status({ fill: 'red', shape: 'ring', text: t(RED, 'common.status.noBridge', 'no bridge') });
  return new Error(text);
}

/**
 * The node's bridge. Without one the node says so: a red status, and an error
 * for every message it gets (`input`) or once (nodes that take no input).
 */
export function bridgeOrSayWhy(RED: RedApi, node: RedNode, def: RedNodeDef, on: 'input' | 'once'): BridgeController | undefined {
  const bridge = bridgeOf(RED, def);
  if (bridge) return bridge;
  const err = noBridge(RED, node);
  if (on === 'input') node.on('input', (_msg, _send, done) => done(err));
  else node.error(err.message);
  return undefined;
}
