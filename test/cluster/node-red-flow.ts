// The Node-RED flow the cluster tests load (node-red.test.ts, node-red-failover.test.ts): a hearth-bridge on a
// clustered broker with a device, state and audit node, each wired to a helper node the test reads.
import { join } from 'node:path';
import type { Hearth } from '../../src/hearth.js';
import { node } from '../nodes/support.js';

/** A flow on a bridge to `broker` (its config file next to the database in `dir`). */
export function flow(broker: string, dir: string) {
  return [
    {
      id: 'bridge',
      type: 'hearth-bridge',
      version: 1,
      mode: 'embedded',
      name: 'cluster',
      broker,
      embedded: false,
      demo: 'false',
      devices: '',
      configFile: join(dir, 'hearth.yaml'),
      database: join(dir, 'hearth.db'),
      engine: 'builtin',
      provider: 'intent',
      logLevel: 'error',
    },
    // The tool comes in msg.tool: its name is the discovered light's, known once discovered.
    { id: 'dev', type: 'hearth-device', z: 'f1', bridge: 'bridge', version: 1, mode: 'call', roles: 'owner', wires: [['out']] },
    { id: 'out', type: 'helper', z: 'f1' },
    { id: 'st', type: 'hearth-state', z: 'f1', bridge: 'bridge', entity: '*porch*', ignoreUnavailable: false, wires: [['changes']] },
    { id: 'changes', type: 'helper', z: 'f1' },
    { id: 'au', type: 'hearth-audit', z: 'f1', bridge: 'bridge', outcomes: '', principal: 'flow:*', wires: [['rows']] },
    { id: 'rows', type: 'helper', z: 'f1' },
  ];
}

export async function bridgeHearth(): Promise<Hearth> {
  return (await node('bridge').controller.ready()) as Hearth;
}
