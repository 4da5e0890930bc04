// hearth-device: read an entity's state or call a host tool straight from a
// flow, as principal flow:<node id>, through the same policy and audit.
import { DeviceController, DeviceError } from './lib/device.js';
import { errorOf, list, num, str, t, type NodeMessage, type RedApi, type RedNode, type RedNodeDef } from './lib/red.js';
import { bridgeOrSayWhy, showBridgeState } from './lib/shell.js';
import { migrate } from './lib/versions.js';

/**
 * The arguments of a call: msg.payload when it is an object, {action: payload}
 * for a word that is one of the tool's actions (`turn_off`), else the node's.
 * A state word from a hearth-state node (`on`, `unlocked`) is not an action:
 * the configured arguments hold. Without the tool's actions (unknown), any word.
 */
export function argsOf(payload: unknown, configured: Record<string, unknown>, actions?: readonly string[]): Record<string, unknown> {
  if (payload && typeof payload === 'object' && !Array.isArray(payload)) return payload as Record<string, unknown>;
  if (typeof payload === 'string' && /^[a-z_]{1,40}$/.test(payload.trim()) && (!actions || actions.includes(payload.trim()))) {
    return { ...configured, action: payload.trim() };
  }
  return configured;
}

export default function (RED: RedApi): void {
  function HearthDevice(this: RedNode, saved: RedNodeDef) {
    RED.nodes.createNode(this, saved);
    const def = migrate(saved);
    // Version 0 flows read the result text from msg.payload: they keep it there.
    const textPayload = str(def, 'output') === 'text';
    const node = this;
    const bridge = bridgeOrSayWhy(RED, node, def, 'input');
    if (!bridge) return;
    const mode = str(def, 'mode') === 'read' ? 'read' : 'call';
    let configuredArgs: Record<string, unknown> = {};
    let argsProblem: string | undefined;
    // Arguments: JSON (the default, and every flow from before typed inputs), or msg/flow/global/JSONata per message.
    const argsType = str(def, 'argsType') || 'json';
    if (argsType === 'json') {
      try {
        const raw = str(def, 'args');
        const parsed: unknown = raw ? JSON.parse(raw) : {};
        if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('must be a JSON object');
        configuredArgs = parsed as Record<string, unknown>;
      } catch (err) {
        argsProblem = `${t(RED, 'hearth-device.errors.args', 'the arguments setting is not a JSON object')}: ${errorOf(err).message}`;
        node.error(argsProblem);
      }
    }
    const argsFor = (msg: NodeMessage): Promise<Record<string, unknown>> => {
      if (argsType === 'json') return Promise.resolve(configuredArgs);
      return new Promise((resolve, reject) => {
        const evaluate = RED.util.evaluateNodeProperty;
        if (!evaluate) return reject(new Error('this Node-RED cannot evaluate typed inputs'));
        evaluate(str(def, 'args'), argsType, node, msg, (err, value) => {
          if (err) return reject(new Error(`arguments (${argsType} ${str(def, 'args')}): ${err.message}`));
          if (!value || typeof value !== 'object' || Array.isArray(value)) {
            return reject(new Error(`arguments (${argsType} ${str(def, 'args')}) must be an object, got ${JSON.stringify(value)?.slice(0, 60)}`));
          }
          resolve(value as Record<string, unknown>);
        });
      });
    };
    const controller = new DeviceController(bridge, {
      nodeId: node.id,
      roles: list(str(def, 'roles')),
      approvalWaitMs: Math.max(0, num(def, 'approvalWait', 0)) * 1000,
      onHeld: (id) =>
        node.status({ fill: 'yellow', shape: 'ring', text: `${t(RED, 'hearth-device.status.waiting', 'waiting for approval')} ${id.slice(0, 12)}` }),
    });
    let busy = 0;
    const unsubscribe = showBridgeState(RED, node, bridge, () => busy > 0);

    node.on('input', async (msg: NodeMessage, send, done) => {
      busy++;
      try {
        if (mode === 'read') {
          const entity = typeof msg.entity === 'string' && msg.entity ? msg.entity : str(def, 'entity');
          if (!entity) throw new Error(t(RED, 'hearth-device.errors.noEntity', 'no entity: set one in the node or in msg.entity'));
          const out = await controller.read(entity);
          msg.payload = out.state.value;
          msg.state = out.state;
          msg.entity = out.entity;
          node.status({ fill: 'green', shape: 'dot', text: `${out.entity.id}: ${String(out.state.value).slice(0, 40)}` });
        } else {
          if (argsProblem) throw new Error(argsProblem);
          const tool = typeof msg.tool === 'string' && msg.tool ? msg.tool : str(def, 'tool');
          if (!tool) throw new Error(t(RED, 'hearth-device.errors.noTool', 'no tool: set one in the node or in msg.tool'));
          node.status({ fill: 'blue', shape: 'dot', text: tool });
          const out = await controller.call(
            tool,
            argsType === 'json' ? argsOf(msg.payload, configuredArgs, textPayload ? undefined : await controller.actionsOf(tool)) : await argsFor(msg),
          );
          msg.text = out.result.text ?? '';
          msg.payload = textPayload ? msg.text : await controller.summarize(out.result, out.approvalId);
          msg.result = {
            ...out.result,
            ...(out.auditId !== undefined ? { auditId: out.auditId } : {}),
            ...(out.approvalId ? { approvalId: out.approvalId } : {}),
          };
          node.status({ fill: 'green', shape: 'dot', text: (out.result.text ?? 'done').slice(0, 50) });
        }
        send(msg);
        done();
      } catch (err) {
        if (err instanceof DeviceError && err.result) {
          msg.result = err.result;
          msg.text = err.result.text ?? err.message;
          if (!textPayload && mode === 'call') msg.payload = await controller.summarize(err.result).catch(() => msg.payload);
        }
        node.status({ fill: 'red', shape: 'ring', text: errorOf(err).message.slice(0, 60) });
        done(errorOf(err));
      } finally {
        busy--;
      }
    });

    node.on('close', (_removed, done) => {
      unsubscribe();
      controller.close();
      done();
    });
  }
  RED.nodes.registerType('hearth-device', HearthDevice);
}
