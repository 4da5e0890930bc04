// hearth-bridge: the config node. One Hearth per bridge, shared by every node
// that uses it, closed on redeploy. Broker and model credentials are Node-RED
// credentials (flows_cred.json, encrypted), never in flows.json.
import { homedir } from 'node:os';
import { join } from 'node:path';
import { bool, list, str, t, type RedApi, type RedNodeDef } from './lib/red.js';
import type { HearthBridgeNode } from './lib/shell.js';

// Hearth itself (dist/) is imported when Node-RED loads the node set, not
// statically: a node file stays loadable by require() whatever Hearth's
// module graph does (require(esm) refuses a graph with top-level await).
export default async function (RED: RedApi): Promise<void> {
  const [{ BridgeController }, { redLogger }] = await Promise.all([import('./lib/bridge.js'), import('./lib/logger.js')]);
  function HearthBridge(this: HearthBridgeNode, def: RedNodeDef) {
    RED.nodes.createNode(this, def);
    const creds = this.credentials ?? {};
    const demo = str(def, 'demo');
    const provider = str(def, 'provider');
    const engine = str(def, 'engine');
    this.controller = BridgeController.open(
      {
        brokerUrl: str(def, 'broker') || undefined,
        embedded: bool(def, 'embedded'),
        username: creds.username || undefined,
        password: creds.password || undefined,
        configFile: str(def, 'configFile') || undefined,
        devicePaths: list(str(def, 'devices')),
        demo: demo === 'true' ? true : demo === 'false' ? false : undefined,
        databasePath: str(def, 'database') || undefined,
        engine: engine === 'jan' ? 'jan' : engine === 'builtin' ? 'builtin' : undefined,
        provider: provider === 'openai' ? 'openai' : provider === 'intent' ? 'intent' : undefined,
        baseUrl: str(def, 'baseUrl') || undefined,
        apiKey: creds.apiKey || undefined,
        model: str(def, 'model') || undefined,
        cwd: RED.settings.userDir ?? join(homedir(), '.node-red'),
      },
      redLogger(RED.log, `hearth-bridge:${this.name || this.id}`, str(def, 'logLevel') || 'warn'),
    );
    this.controller.on('state', (state, detail) => {
      if (state === 'error') this.error(`${t(RED, 'hearth-bridge.errors.open', 'Hearth could not start')}: ${detail}`);
    });
    this.on('close', (_removed, done) => {
      this.controller.close().then(
        () => done(),
        (err: Error) => {
          this.warn(err.message);
          done();
        },
      );
    });
  }
  RED.nodes.registerType('hearth-bridge', HearthBridge, {
    credentials: {
      username: { type: 'text' },
      password: { type: 'password' },
      apiKey: { type: 'password' },
    },
  });
}
