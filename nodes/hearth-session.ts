// hearth-session: msg.payload is a prompt, the first output the answer with
// what the turn did, the second every event of the turn as it happens.
import type { AgentEvent } from '../dist/agent/types.js';
import { SessionController, type Activity, type AskMode, type EventInfo, type SessionSettings } from './lib/session.js';
import { errorOf, list, str, bool, t, type NodeMessage, type RedApi, type RedNode, type RedNodeDef } from './lib/red.js';
import { RemoteSessionController } from './lib/remote-session.js';
import { bridgeOrSayWhy, showBridgeState } from './lib/shell.js';

export default function (RED: RedApi): void {
  function HearthSession(this: RedNode, def: RedNodeDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    const bridge = bridgeOrSayWhy(RED, node, def, 'input');
    if (!bridge) return;
    const ask = str(def, 'ask');
    let activity: Activity = { turns: 0, waiting: 0 };
    const showActivity = (a: Activity) => {
      activity = a;
      if (a.waiting > 0) node.status({ fill: 'yellow', shape: 'ring', text: t(RED, 'hearth-session.status.waiting', 'waiting for approval') });
      else if (a.turns > 0)
        node.status({ fill: 'blue', shape: 'dot', text: t(RED, 'hearth-session.status.thinking', 'thinking') + (a.turns > 1 ? ` (${a.turns})` : '') });
      else if (a.last === 'done') node.status({ fill: 'green', shape: 'dot', text: t(RED, 'hearth-session.status.done', 'done') });
      else if (a.last === 'interrupted') node.status({ fill: 'grey', shape: 'ring', text: t(RED, 'hearth-session.status.interrupted', 'interrupted') });
      else if (a.last === 'error')
        node.status({ fill: 'red', shape: 'ring', text: `${t(RED, 'hearth-session.status.error', 'error')}: ${(a.error ?? '').slice(0, 50)}` });
    };
    const settings: SessionSettings & { roles: string[] } = {
      nodeId: node.id,
      principal: str(def, 'principal') || undefined,
      roles: list(str(def, 'roles')),
      ephemeral: bool(def, 'ephemeral'),
      systemPrompt: str(def, 'systemPrompt') || undefined,
      ask: (['confirm', 'always', 'never'] as const).includes(ask as AskMode) ? (ask as AskMode) : 'confirm',
    };
    const hooks = {
      event: (event: AgentEvent, info: EventInfo) => {
        node.send([null, { payload: event, topic: event.type, session: info.sessionId, turnId: info.turnId, principal: info.principal }]);
      },
      activity: showActivity,
      warn: (text: string) => node.warn(text),
    };
    // On a daemon bridge the turns run in the daemon as the token's principal (its policy, approvals, audit).
    const controller = bridge.daemon ? new RemoteSessionController(bridge, bridge.daemon, settings, hooks) : new SessionController(bridge, settings, hooks);
    if (bridge.daemon && (settings.principal || settings.roles.length)) {
      node.warn(
        t(
          RED,
          'hearth-session.errors.daemonPrincipal',
          "connected to a daemon, the session runs as the token's principal: the principal and roles set here are not used",
        ),
      );
    }
    const unsubscribe = showBridgeState(RED, node, bridge, () => activity.turns > 0 || activity.waiting > 0);

    node.on('input', async (msg: NodeMessage, send, done) => {
      try {
        if (msg.interrupt) {
          const n = controller.interrupt({ session: msg.session, topic: msg.topic });
          if (n === 0) node.debug(`nothing to interrupt for ${String(msg.session ?? msg.topic ?? 'default')}`);
          return done();
        }
        if (msg.reset) {
          await controller.reset({ session: msg.session, topic: msg.topic });
          if (msg.payload === undefined || msg.payload === null || msg.payload === '') return done();
        }
        const outcome = await controller.prompt({ text: msg.payload, principal: msg.principal, session: msg.session, topic: msg.topic });
        const { text, sessionId, ...result } = outcome;
        msg.payload = text;
        msg.session = sessionId;
        msg.result = result;
        if (outcome.stopReason === 'error') {
          return done(new Error(`${t(RED, 'hearth-session.errors.turn', 'the turn failed')}: ${outcome.error ?? 'unknown error'}`));
        }
        send([msg, null]);
        done();
      } catch (err) {
        showActivity({ ...activity, last: 'error', error: errorOf(err).message });
        done(errorOf(err));
      }
    });

    node.on('close', (_removed, done) => {
      unsubscribe();
      controller.close().then(
        () => done(),
        () => done(),
      );
    });
  }
  RED.nodes.registerType('hearth-session', HearthSession);
}
