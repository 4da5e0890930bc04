// hearth-bridge: the config node. By default it connects to a running Hearth
// daemon (`hearth start`) over its HTTP API with a token, so policy,
// approvals, audit and tool names are the daemon's, one across Node-RED, the
// CLI and the page. With mode `embedded` it runs its own Hearth (broker
// connection, devices, database) shared by every node that uses it, closed on
// redeploy. Tokens, broker and model credentials are Node-RED credentials
// (flows_cred.json, encrypted), never in flows.json.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { bool, list, str, t, type RedApi, type RedNodeDef } from './lib/red.js';
import type { HearthBridgeNode } from './lib/shell.js';
import { migrate } from './lib/versions.js';

/** A Node-RED tls-config node as the runtime holds it: the PEM contents, read from files or uploads. */
interface TlsConfigNode {
  cert?: Buffer | string;
  key?: Buffer | string;
  ca?: Buffer | string;
  verifyservercert?: boolean;
}

export const DEFAULT_DAEMON_URL = 'http://127.0.0.1:8080';

// Hearth itself (dist/) is imported when Node-RED loads the node set, not
// statically: a node file stays loadable by require() whatever Hearth's
// module graph does (require(esm) refuses a graph with top-level await).
export default async function (RED: RedApi): Promise<void> {
  const [{ BridgeController }, { redLogger }] = await Promise.all([import('./lib/bridge.js'), import('./lib/logger.js')]);

  /** Hearth reads TLS material from files: write the tls-config node's PEMs next to the flows (owner-only). */
  function tlsFiles(id: string, userDir: string): { ca?: string; cert?: string; key?: string; rejectUnauthorized?: boolean } | undefined {
    const tls = RED.nodes.getNode(id) as TlsConfigNode | null;
    if (!tls) return undefined;
    const dir = join(userDir, '.hearth-tls', id.replace(/[^\w.-]/g, '_'));
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const out: { ca?: string; cert?: string; key?: string; rejectUnauthorized?: boolean } = { rejectUnauthorized: tls.verifyservercert !== false };
    for (const part of ['ca', 'cert', 'key'] as const) {
      const pem = tls[part];
      if (!pem?.length) continue;
      const file = join(dir, `${part}.pem`);
      writeFileSync(file, pem, { mode: 0o600 });
      chmodSync(file, 0o600);
      out[part] = file;
    }
    return out;
  }

  function HearthBridge(this: HearthBridgeNode, saved: RedNodeDef) {
    RED.nodes.createNode(this, saved);
    // A bridge saved before `version` embedded Hearth: it still does.
    const def = migrate(saved);
    const creds = this.credentials ?? {};
    const userDir = RED.settings.userDir ?? join(homedir(), '.node-red');
    const log = redLogger(RED.log, `hearth-bridge:${this.name || this.id}`, str(def, 'logLevel') || 'warn');
    if (str(def, 'mode') !== 'embedded') {
      try {
        this.controller = BridgeController.connect({ url: str(def, 'daemonUrl') || DEFAULT_DAEMON_URL, token: creds.token ?? '' });
      } catch (err) {
        // A bad URL or no token: a bridge that says why on every node.
        this.controller = new BridgeController(() => Promise.reject(err as Error));
      }
    } else {
      const demo = str(def, 'demo');
      const provider = str(def, 'provider');
      const engine = str(def, 'engine');
      this.controller = BridgeController.open(
        {
          brokerUrl: str(def, 'broker') || undefined,
          embedded: bool(def, 'embedded'),
          username: creds.username || undefined,
          password: creds.password || undefined,
          tls: str(def, 'tls') ? tlsFiles(str(def, 'tls'), userDir) : undefined,
          configFile: str(def, 'configFile') || undefined,
          devicePaths: list(str(def, 'devices')),
          demo: demo === 'true' ? true : demo === 'false' ? false : undefined,
          databasePath: str(def, 'database') || undefined,
          engine: engine === 'jan' ? 'jan' : engine === 'builtin' ? 'builtin' : undefined,
          provider: provider === 'openai' ? 'openai' : provider === 'intent' ? 'intent' : undefined,
          baseUrl: str(def, 'baseUrl') || undefined,
          apiKey: creds.apiKey || undefined,
          model: str(def, 'model') || undefined,
          cwd: userDir,
        },
        log,
      );
    }
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
  // The editor's pickers: GET hearth/bridges/<id>/catalog, for users with hearth.read (or *) when adminAuth is on.
  const { catalogOf } = await import('./lib/catalog.js');
  RED.httpAdmin?.get('/hearth/bridges/:id/catalog', RED.auth?.needsPermission('hearth.read') ?? ((_q, _s, next) => next()), (req, res) => {
    const node = RED.nodes.getNode(req.params.id) as HearthBridgeNode | null;
    if (node?.type !== 'hearth-bridge') {
      res.status(404).json({ error: `no deployed hearth-bridge ${JSON.stringify(req.params.id)}: deploy it first, then the pickers fill in` });
      return;
    }
    catalogOf(node.controller).then(
      (catalog) => res.json(catalog),
      (err: Error) => res.status(503).json({ error: `the bridge cannot answer yet: ${err.message}` }),
    );
  });

  RED.nodes.registerType('hearth-bridge', HearthBridge, {
    credentials: {
      token: { type: 'password' },
      username: { type: 'text' },
      password: { type: 'password' },
      apiKey: { type: 'password' },
    },
  });
}
