// The controller behind the hearth-bridge config node: one Hearth (broker
// connection, devices, database with policy, approvals and audit, agent),
// shared by every node that uses the bridge and closed on redeploy. No
// Node-RED in here, so it can be tested alone.
import { EventEmitter } from 'node:events';
import { isAbsolute, resolve } from 'node:path';
import { loadConfig } from '../../dist/config/load.js';
import type { HearthConfig } from '../../dist/config/schema.js';
import { Hearth } from '../../dist/hearth.js';
import type { Logger } from '../../dist/log.js';
import { brokerNodesProblem } from '../../dist/mqtt/broker-nodes.js';
import { externalToolsOf, type ExternalTools } from '../../dist/tools/external-tools.js';
import { stateJson } from '../../dist/present/state.js';
import type { EntityState } from '../../dist/devices/state-cache.js';
import type { Entity } from '../../dist/devices/model.js';
import type { Principal } from '../../dist/tools/types.js';
import { ApprovalHub } from './approvals.js';
import { RemoteApprovalHub } from './remote-approvals.js';
import type { StateFeed, StateJson } from './state.js';
import { DaemonClient, type DaemonSettings, type DaemonState } from './daemon.js';

/** An embedded Hearth's states as this principal may read them: the one read check, asked per event. */
export function hearthStateFeed(hearth: Hearth, principal: Principal): StateFeed {
  const cache = hearth.bridge.cache;
  return {
    snapshot: async () => hearth.visibleEntities(principal).map((e) => stateJson(e, cache.get(e.id)) as StateJson),
    subscribe: (fn) => {
      const on = (state: EntityState, entity: Entity) => {
        if (!hearth.readDenied(principal, entity)) fn(stateJson(entity, state) as StateJson);
      };
      cache.on('change', on);
      return () => cache.off('change', on);
    },
  };
}

export const DEFAULT_BROKER_URL = 'mqtt://127.0.0.1:1883';

export interface BridgeSettings {
  /** Broker URL, or a clustered broker's nodes comma-separated; default mqtt://127.0.0.1:1883 (a running `hearth start`). */
  brokerUrl?: string;
  /** Run Hearth's embedded broker here (on the URL's port) instead of connecting to one. */
  embedded?: boolean;
  username?: string;
  password?: string;
  /** TLS for mqtts:// / wss:// (paths to PEM files), e.g. from a Node-RED tls-config node. */
  tls?: { ca?: string; cert?: string; key?: string; rejectUnauthorized?: boolean };
  /** A hearth.yaml to start from (the node's settings override it). */
  configFile?: string;
  devicePaths?: string[];
  /** Load the demo home's devices (undefined: as the config file or Hearth's default says). */
  demo?: boolean;
  /** Run the demo simulator here (only with the embedded broker). */
  simulate?: boolean;
  databasePath?: string;
  engine?: 'builtin' | 'jan';
  provider?: 'intent' | 'openai';
  baseUrl?: string;
  apiKey?: string;
  model?: string;
  /** Relative paths resolve against this folder (Node-RED's user directory). */
  cwd: string;
  /** How long to wait for the broker before going on (Hearth keeps retrying); default 3 s. */
  connectWaitMs?: number;
  /** How long to wait for retained device state after connecting; default 2 s. */
  settleMs?: number;
}

/** The node's settings as Hearth's one config object (defaults + optional file + these settings). */
export function bridgeConfig(s: BridgeSettings): HearthConfig {
  const flags: Record<string, string | string[] | boolean> = {};
  const url = s.brokerUrl?.trim() || DEFAULT_BROKER_URL;
  if (s.embedded) {
    let port = 1883;
    try {
      port = Number(new URL(url).port || 1883);
    } catch {
      // keep the default port
    }
    flags['mqtt.embedded.port'] = String(port);
  } else {
    // Said in the form's words, before Hearth's config check would say `mqtt.url`.
    const problem = brokerNodesProblem(url);
    if (problem) throw new Error(`Broker URL (broker): ${problem}; give one broker URL, or a cluster's nodes comma-separated`);
    flags['mqtt.url'] = url;
  }
  if (s.username) flags['mqtt.username'] = s.username;
  if (s.password) flags['mqtt.password'] = s.password;
  if (s.tls?.ca) flags['mqtt.ca'] = s.tls.ca;
  if (s.tls?.cert) flags['mqtt.cert'] = s.tls.cert;
  if (s.tls?.key) flags['mqtt.key'] = s.tls.key;
  if (s.tls?.rejectUnauthorized !== undefined) flags['mqtt.rejectUnauthorized'] = s.tls.rejectUnauthorized;
  if (s.devicePaths?.length) flags['devices.paths'] = s.devicePaths.map((p) => (isAbsolute(p) ? p : resolve(s.cwd, p)));
  // A broker of one's own has its own devices: the demo home only when asked for (or on the embedded broker).
  if (s.demo !== undefined) flags.demo = s.demo;
  else if (!s.embedded) flags.demo = false;
  flags['database.path'] = s.databasePath?.trim() ? resolve(s.cwd, s.databasePath.trim()) : resolve(s.cwd, 'hearth.db');
  if (s.engine) flags['agent.engine'] = s.engine;
  if (s.provider) flags['agent.provider'] = s.provider;
  if (s.baseUrl) flags['agent.baseUrl'] = s.baseUrl;
  if (s.apiKey) flags['agent.apiKey'] = s.apiKey;
  if (s.model) flags['agent.model'] = s.model;
  return loadConfig({ cwd: s.cwd, env: {}, file: s.configFile?.trim() || undefined, flags }).config;
}

export type BridgeState = 'starting' | 'connected' | 'disconnected' | 'error' | 'closed';

export interface BridgeEvents {
  state: [state: BridgeState, detail?: string];
}

/** What a daemon's connection state shows as on the nodes. */
const FROM_DAEMON: Record<DaemonState, BridgeState> = {
  connecting: 'starting',
  connected: 'connected',
  disconnected: 'disconnected',
  error: 'error',
  closed: 'closed',
};

export class BridgeController extends EventEmitter<BridgeEvents> {
  private readonly opening: Promise<Hearth>;
  /** Set when the bridge talks to a running daemon (mode: daemon) instead of embedding Hearth. */
  readonly daemon?: DaemonClient;
  private hearth?: Hearth;
  private current: BridgeState = 'starting';
  private problem?: string;
  private hub?: ApprovalHub;
  private closed = false;

  constructor(source: (() => Promise<Hearth>) | DaemonClient) {
    super();
    this.setMaxListeners(0);
    if (source instanceof DaemonClient) {
      const daemon = source;
      this.daemon = daemon;
      this.opening = Promise.reject(
        new Error("this needs a Hearth embedded in Node-RED (bridge mode: embedded); connected to a daemon, every hearth node works through the daemon's API"),
      );
      this.opening.catch(() => undefined);
      daemon.on('state', (state, detail) => {
        if (this.closed && state !== 'closed') return;
        if (state === 'error') this.problem = detail;
        this.setState(FROM_DAEMON[state], detail);
      });
      daemon.connect();
      return;
    }
    this.opening = source();
    this.opening.then(
      (hearth) => {
        // Closed while opening: close() closes it.
        if (this.closed) return;
        this.hearth = hearth;
        this.hub = new ApprovalHub(hearth.approvals);
        hearth.bridge.connection.on('state', this.onConnection);
        this.setState(hearth.bridge.connection.connected ? 'connected' : 'disconnected');
      },
      (err: Error) => {
        this.problem = err.message;
        this.setState('error', err.message);
      },
    );
  }

  /** Open Hearth from node settings. */
  static open(settings: BridgeSettings, log: Logger): BridgeController {
    return new BridgeController(async () => {
      const config = bridgeConfig(settings);
      const hearth = await Hearth.open({
        config,
        log,
        cwd: settings.cwd,
        connectWaitMs: settings.connectWaitMs ?? 3000,
        embedBroker: settings.embedded ?? false,
        simulate: (settings.embedded ?? false) && (settings.simulate ?? true),
      });
      if (settings.embedded) hearth.recoverAudit();
      // Let retained state arrive, so the first read or prompt sees the home as it is.
      if (hearth.bridge.connection.connected) await hearth.bridge.settle(settings.settleMs ?? 2000);
      return hearth;
    });
  }

  /** Connect to a running daemon over its HTTP API with a token. */
  static connect(settings: DaemonSettings): BridgeController {
    return new BridgeController(new DaemonClient(settings));
  }

  private readonly onConnection = (state: string) => {
    if (this.closed) return;
    this.setState(state === 'connected' ? 'connected' : 'disconnected');
  };

  private setState(state: BridgeState, detail?: string): void {
    if (state === this.current && !detail) return;
    this.current = state;
    this.emit('state', state, detail);
  }

  get state(): BridgeState {
    return this.current;
  }

  /** Why the bridge could not open. */
  get error(): string | undefined {
    return this.problem;
  }

  /** The shared Hearth, once open; rejects when it could not open or the bridge closed. */
  async ready(): Promise<Hearth> {
    if (this.closed) throw new Error('the hearth-bridge was closed (redeployed)');
    if (this.daemon) return this.opening;
    try {
      return await this.opening;
    } catch (err) {
      throw new Error(`hearth-bridge could not start: ${(err as Error).message}`);
    }
  }

  /** The approvals hub of the embedded Hearth (sessions ask permission through it; available once ready). */
  async approvals(): Promise<ApprovalHub> {
    await this.ready();
    return this.hub!;
  }

  /** What hearth-approval nodes show and decide: the embedded hub, or the daemon's holds on a daemon bridge. */
  async approvalHub(): Promise<ApprovalHub | RemoteApprovalHub> {
    if (this.daemon) {
      this.remoteHub ??= new RemoteApprovalHub(this.daemon);
      return this.remoteHub;
    }
    return this.approvals();
  }

  private remoteHub?: RemoteApprovalHub;

  /** Synchronous peek: is a hearth-approval node listening on this bridge? */
  get hasApprovers(): boolean {
    return this.hub?.hasApprovers ?? this.remoteHub?.hasApprovers ?? false;
  }

  /** States as this principal may read them. */
  async stateFeed(principal: Principal): Promise<StateFeed> {
    // A daemon shows the token's principal what it may read; the node's own principal is the embedded case.
    if (this.daemon) return this.daemon.stateFeed();
    return hearthStateFeed(await this.ready(), principal);
  }

  /** Flow-declared tools of this bridge. */
  async externalTools(): Promise<ExternalTools> {
    const hearth = await this.ready();
    return externalToolsOf(hearth.tools);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.setState('closed');
    this.daemon?.close();
    this.remoteHub?.close();
    this.hub?.close();
    const hearth = this.hearth ?? (await this.opening.catch(() => undefined));
    if (!hearth) return;
    hearth.bridge.connection.off('state', this.onConnection);
    await hearth.close();
  }
}
