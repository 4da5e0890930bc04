// Shared by the Node-RED node tests: the test helper started from ESM, the
// compiled nodes, a bridge config pointing at a test home, and bounded waits
// for messages and statuses.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import helper from 'node-red-node-test-helper';
import { after, afterEach, before } from 'node:test';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { startHome, type TestHome } from '../helpers/home.js';
import approvalNode from '../../nodes/hearth-approval.js';
import auditNode from '../../nodes/hearth-audit.js';
import bridgeNode from '../../nodes/hearth-bridge.js';
import deviceNode from '../../nodes/hearth-device.js';
import sessionNode from '../../nodes/hearth-session.js';
import toolNode from '../../nodes/hearth-tool.js';
import stateNode from '../../nodes/hearth-state.js';
import currentStateNode from '../../nodes/hearth-current-state.js';

helper.init(createRequire(import.meta.url).resolve('node-red'));

export { helper };
export const ALL_NODES = [bridgeNode, sessionNode, approvalNode, toolNode, auditNode, deviceNode, stateNode, currentStateNode];

type FlowNode = Record<string, unknown> & { id: string; type: string };

export interface Msg {
  payload?: any;
  topic?: string;
  [key: string]: any;
}

/** A hearth-bridge config node on the test home's broker, devices and database. */
export function bridgeDef(home: TestHome, extra: Record<string, unknown> = {}): FlowNode {
  return {
    id: 'bridge',
    type: 'hearth-bridge',
    name: 'test home',
    broker: home.hearth.bridge.config.mqtt.url,
    embedded: false,
    devices: join(home.dir, 'devices'),
    demo: 'false',
    database: home.hearth.bridge.config.database.path,
    engine: 'builtin',
    provider: 'intent',
    logLevel: 'error',
    ...extra,
  };
}

/** Load a flow; nodes on tab f1 get the tab (without it the runtime starts them twice). `core`: Node-RED core nodes it also uses. */
export async function load(flow: FlowNode[], credentials: Record<string, Record<string, string>> = {}, core: unknown[] = []): Promise<void> {
  const tabs = flow.some((n) => n.z === 'f1') && !flow.some((n) => n.id === 'f1') ? [{ id: 'f1', type: 'tab', label: 'test' }] : [];
  loaded = true;
  await helper.load([...ALL_NODES, ...core], [...tabs, ...flow], credentials);
}

/** Node-RED's own function node, for flows that compute an answer. */
export const functionNode: unknown = createRequire(import.meta.url)('@node-red/nodes/core/function/10-function.js');

export function node(id: string): any {
  const n = helper.getNode(id);
  if (!n) throw new Error(`no node ${id} in the flow`);
  return n;
}

/** Collects what arrives at a helper node. */
export function collect(id: string): Msg[] {
  const seen: Msg[] = [];
  node(id).on('input', (msg: Msg) => seen.push(msg));
  return seen;
}

/** The next message a helper node receives (that passes `accept`). */
export function nextMessage(id: string, timeoutMs = 10_000, accept: (m: Msg) => boolean = () => true): Promise<Msg> {
  const n = node(id);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      n.off('input', on);
      reject(new Error(`no message at ${id} within ${timeoutMs} ms`));
    }, timeoutMs);
    const on = (msg: Msg) => {
      if (!accept(msg)) return;
      clearTimeout(timer);
      n.off('input', on);
      resolve(msg);
    };
    n.on('input', on);
  });
}

/** Resolves with the first status (the current one included) that passes `accept`. */
export function waitForStatus(
  id: string,
  accept: (s: { fill?: string; shape?: string; text?: string }) => boolean,
  timeoutMs = 10_000,
): Promise<{ fill?: string; shape?: string; text?: string }> {
  const n = node(id);
  const statuses: Array<{ fill?: string; shape?: string; text?: string }> = [];
  return new Promise((resolve, reject) => {
    const check = () => {
      const hit = statuses.find(accept);
      if (!hit) return false;
      clearTimeout(timer);
      clearInterval(poll);
      n.off('call:status', onCall);
      resolve(hit);
      return true;
    };
    const onCall = (call: { args: [{ fill?: string; shape?: string; text?: string }] }) => {
      statuses.push(call.args[0]);
      check();
    };
    // Statuses set before we listened: the spy remembers them.
    const poll = setInterval(() => {
      // The helper spies on Node.prototype.status: one spy for every node.
      const spy = n.status as { getCalls?: () => Array<{ args: unknown[]; thisValue: unknown }> };
      for (const c of spy.getCalls?.() ?? []) if (c.thisValue === n) statuses.push(c.args[0] as { fill?: string });
      check();
    }, 50);
    const timer = setTimeout(() => {
      clearInterval(poll);
      n.off('call:status', onCall);
      reject(new Error(`status of ${id} never matched; saw ${JSON.stringify(statuses.slice(-5))}`));
    }, timeoutMs);
    n.on('call:status', onCall);
  });
}

let loaded = false;

/** Stop the flow (once: a second stop of the same flows never settles). */
export async function unload(): Promise<void> {
  if (!loaded) return;
  loaded = false;
  await helper.unload();
}

/**
 * The simulated demo home on aedes for this test file (before/after hooks),
 * with every test's flow unloaded after it. Read `home` and `broker` inside tests.
 */
export function useDemoHome(): { broker: TestBroker; home: TestHome } {
  const ctx = {} as { broker: TestBroker; home: TestHome };
  before(async () => {
    ctx.broker = await startAedes();
    ctx.home = await startHome(ctx.broker, { travelMs: 200 });
  });
  after(async () => {
    await ctx.home?.close();
    await ctx.broker?.stop();
  });
  afterEach(async () => {
    await unload();
  });
  return ctx;
}
