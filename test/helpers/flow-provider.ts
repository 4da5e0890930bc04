// A flow providing tools to a demo home, as the daemon's provider path holds one (FlowToolProviders with
// the home's real policy engine, SQLite audit and approvals), answering each call it gets with answer(args).
// Started before the describe block's tests and closed after them, with its broker.
import { after, before } from 'node:test';
import pino from 'pino';
import { checkDefinitions, FlowToolProviders } from '../../src/tools/flow-tool-providers.js';
import type { ToolResultObject } from '../../src/tools/types.js';
import { startAedes, type TestBroker } from './brokers.js';
import { startHome, type TestHome } from './home.js';

export interface FlowOnHome {
  home: TestHome;
  providers: FlowToolProviders;
  /** The arguments of every call the flow got, in order. */
  calls: Array<Record<string, unknown>>;
}

export function flowOnHome(tools: unknown[], answer: (args: Record<string, unknown>) => ToolResultObject, source = 'flow:test'): FlowOnHome {
  const fx = { calls: [] } as unknown as FlowOnHome;
  let broker: TestBroker | undefined;
  before(async () => {
    broker = await startAedes();
    fx.home = await startHome(broker);
    const silent = pino({ level: 'silent' });
    const hearth = fx.home.hearth;
    fx.providers = new FlowToolProviders(
      hearth.tools.external,
      { policy: hearth.policy, audit: hearth.audit, approvals: hearth.approvals, log: silent },
      (name) => hearth.tools.isDeviceTool(name),
      silent,
    );
    const holder = { principal: 'http:node-red' };
    fx.providers.register(holder, source, checkDefinitions(tools), (e) => {
      if (e.event === 'call') {
        fx.calls.push(e.data.args);
        queueMicrotask(() => fx.providers.answer(holder, e.data.id, answer(e.data.args)));
      }
      return true;
    });
  });
  after(async () => {
    fx.providers?.closeAll();
    await fx.home?.close();
    await broker?.stop();
  });
  return fx;
}
