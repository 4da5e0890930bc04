// The running bridge: broker (embedded or not), the MQTT connection, the
// device registry fed by device files, and the state cache that mirrors them.
// Every front door is built on one of these.
import { type DaemonStatus, parseStatus, statusPayload } from './mqtt/daemon-status.js';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { resolve } from 'node:path';
import type { HearthConfig } from './config/schema.js';
import { ConfigError } from './config/load.js';
import { loadDeviceFiles, type DeviceFileProblem } from './devices/loader.js';
import type { Device } from './devices/model.js';
import { DeviceFileWatcher } from './devices/watcher.js';
import type { EntityMemory } from './devices/entity-names.js';
import type { HomeModel } from './devices/home/home-model.js';
import { DeviceRegistry, FILE_SOURCE } from './devices/registry.js';
import { RetainedCommandSweeper } from './devices/retained-commands.js';
import { StateCache } from './devices/state-cache.js';
import type { Logger } from './log.js';
import { MqttConnection, type MqttError } from './mqtt/connection.js';
// The embedded broker (aedes) and the simulator (sharp) are loaded only by what runs them (`hearth start`).
import { BrokerAccess, type BrokerCredential, newHearthCredential } from './mqtt/broker-access.js';
import { credentialFileFor, readCredential, removeCredential, sameBroker, writeCredential } from './mqtt/broker-credential-file.js';
import type { EmbeddedBroker } from './mqtt/embedded-broker.js';
import { isLoopbackHost } from './util/loopback.js';
import type { Simulator } from './simulator/simulator.js';
import { SOURCE_PRIORITY, type DiscoveryAdapter } from './devices/discovery/adapter.js';
import { DeviceIds } from './devices/device-ids.js';
import { controlTopics, createAdapters, sourceTopics } from './devices/discovery/index.js';

/** The package's own folder (holds devices/demo and migrations/), from src/ or dist/. */
export const PACKAGE_ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
export const DEMO_DEVICES = resolve(PACKAGE_ROOT, 'devices', 'demo');

export interface BridgeOptions {
  config: HearthConfig;
  log: Logger;
  /** Working directory for the default ./devices folder. */
  cwd?: string;
  /** Run the embedded broker when there is no mqtt.url (the `start` command); clients just connect to it. */
  embedBroker?: boolean;
  /** Run the demo home's simulator when the demo is on. */
  simulate?: boolean;
  /** How long to wait for the first connection before going on (it keeps retrying). */
  connectWaitMs?: number;
  /** Do not connect to any broker (device files only). */
  offline?: boolean;
  /** Remembers the order discovered entities were first seen (the assembly gives SQLite's); in memory otherwise. */
  entityMemory?: EntityMemory;
  /** Areas, floors and people's choices (the assembly gives SQLite's); in memory otherwise. */
  home?: HomeModel;
  /** The ids discovered devices were given when first seen (the assembly gives SQLite's); in memory otherwise. */
  deviceIds?: DeviceIds;
  /**
   * false: publish nothing of our own accord (the Home Assistant birth message,
   * Zigbee2MQTT state requests). Those are the daemon's; a command that only reads
   * must leave the user's broker alone. Commands a caller asked for still go out.
   */
  announce?: boolean;
  /**
   * The daemon: leave a last will on hearth/status saying this home's daemon is offline (setStatus says it is
   * online). Every bridge reads the status (servedBy) whether it says one or not.
   */
  statusWill?: boolean;
}

/**
 * Whether the embedded broker lets clients connect without a user name: by default only on a loopback host.
 * On any other host it must be off (devices use mqtt.embedded.accounts), as the HTTP door refuses to run
 * without auth off loopback.
 */
export function anonymousAllowed(config: HearthConfig): boolean {
  const { host, allowAnonymous, accounts } = config.mqtt.embedded;
  const loopback = isLoopbackHost(host);
  if (allowAnonymous === true && !loopback)
    throw new ConfigError(
      'settings',
      'mqtt.embedded.allowAnonymous',
      `true is allowed only when mqtt.embedded.host is a loopback address, not ${JSON.stringify(host)}: give devices accounts (mqtt.embedded.accounts) or bind the broker to 127.0.0.1`,
    );
  if (!loopback && !accounts.length)
    throw new ConfigError(
      'settings',
      'mqtt.embedded.accounts',
      `the embedded broker on ${JSON.stringify(host)} is reachable from other machines: give devices accounts (username, password) so that a stranger cannot connect, or bind it to 127.0.0.1`,
    );
  return allowAnonymous ?? loopback;
}

/** Whether the demo home is on: explicitly, or by default with the embedded broker. */
export function demoEnabled(config: HearthConfig): boolean {
  return config.demo ?? !config.mqtt.url;
}

/** The device files and folders this config reads. */
export function devicePaths(config: HearthConfig, cwd: string): string[] {
  const paths = [...(config.devices.paths ?? [])];
  if (!config.devices.paths) {
    const local = resolve(cwd, 'devices');
    // ./devices is the user's folder, unless it is this package's own (which only holds the demo).
    if (existsSync(local) && local !== resolve(PACKAGE_ROOT, 'devices')) paths.push(local);
  }
  if (demoEnabled(config) && !paths.includes(DEMO_DEVICES)) paths.push(DEMO_DEVICES);
  return paths;
}

export function brokerUrl(config: HearthConfig, embedded?: EmbeddedBroker): string {
  if (config.mqtt.url) return config.mqtt.url;
  if (embedded) return embedded.url;
  const host = config.mqtt.embedded.host === '0.0.0.0' ? '127.0.0.1' : config.mqtt.embedded.host;
  return `mqtt://${host}:${config.mqtt.embedded.port}`;
}

/** The connection as discovery sees it when it may not announce: every publish is dropped. */
function listenOnly(connection: MqttConnection, log: Logger): MqttConnection {
  return new Proxy(connection, {
    get(target, prop) {
      if (prop === 'publish') {
        return (topic: string) => {
          log.debug({ topic }, 'not published: this command only reads');
          return Promise.resolve();
        };
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

export class Bridge {
  readonly registry: DeviceRegistry;
  readonly cache: StateCache;
  readonly deviceIds: DeviceIds;
  deviceProblems: DeviceFileProblem[] = [];
  deviceFiles: string[] = [];
  private closed = false;
  /** Each file's devices as last read without problems: a file broken mid-edit keeps them. */
  private lastGood = new Map<string, Device[]>();
  private fileDeviceIds = new Set<string>();
  private watcher?: DeviceFileWatcher;

  private constructor(
    readonly config: HearthConfig,
    readonly log: Logger,
    readonly connection: MqttConnection,
    readonly broker: EmbeddedBroker | undefined,
    readonly paths: string[],
    entityMemory?: EntityMemory,
    home?: HomeModel,
    deviceIds?: DeviceIds,
  ) {
    this.deviceIds = deviceIds ?? new DeviceIds(undefined, { log: log.child({ part: 'devices' }) });
    this.registry = new DeviceRegistry({
      log: log.child({ part: 'devices' }),
      memory: entityMemory,
      reserved: controlTopics(config),
      sourceTopics: sourceTopics(config),
      home,
      entityKeys: this.deviceIds.entityKeys,
    });
    // A newcomer's id is never one the home already has (a device file's, another source's).
    this.deviceIds.inUse = (id) => !!this.registry.device(id);
    this.cache = new StateCache(connection, log.child({ part: 'state' }));
    this.registry.on('preparing', (devices) => this.cache.prepare(devices));
    this.registry.on('changed', (devices) => this.cache.setDevices(devices));
  }

  simulator?: Simulator;
  adapters: DiscoveryAdapter[] = [];
  private sweeper?: RetainedCommandSweeper;

  static async start(options: BridgeOptions): Promise<Bridge> {
    const { config, log } = options;
    const cwd = options.cwd ?? process.cwd();
    const embedding = !config.mqtt.url && options.embedBroker && !options.offline;
    // Hearth's own credential on the embedded broker: made here when this process runs it, else read from beside
    // the database when another Hearth process on the same database does (credentialFileFor).
    const credentialFile = credentialFileFor(config.database.path);
    let credential: BrokerCredential | undefined;
    let registryRef: DeviceRegistry | undefined;
    let broker: EmbeddedBroker | undefined;
    if (embedding) {
      const { startEmbeddedBroker } = await import('./mqtt/embedded-broker.js');
      credential = newHearthCredential();
      const access = new BrokerAccess({
        hearth: credential,
        accounts: config.mqtt.embedded.accounts,
        allowAnonymous: anonymousAllowed(config),
        // Until the home is loaded every topic counts as a command topic: only Hearth publishes.
        isCommandTopic: (topic) => registryRef?.isCommandTopic(topic) ?? true,
        statusTopic: config.mqtt.statusTopic,
        hearthClientId: config.mqtt.clientId,
        log: log.child({ part: 'broker' }),
      });
      broker = await startEmbeddedBroker(config.mqtt.embedded.host, config.mqtt.embedded.port, log.child({ part: 'broker' }), access);
      if (credentialFile) writeCredential(credentialFile, credential, broker.url);
    }
    const url = brokerUrl(config, broker);
    if (!embedding && credentialFile) {
      // A Hearth on the same database and the same broker is Hearth: it shares the policy and the audit.
      const stored = readCredential(credentialFile);
      if (stored && sameBroker(stored.url, url)) credential = stored;
    }
    const connection = new MqttConnection(
      {
        url,
        username: credential?.username ?? config.mqtt.username,
        password: credential?.password ?? config.mqtt.password,
        clientId: config.mqtt.clientId,
        ca: config.mqtt.ca,
        cert: config.mqtt.cert,
        key: config.mqtt.key,
        rejectUnauthorized: config.mqtt.rejectUnauthorized,
        // aedes speaks 3.1.1 only.
        protocolVersion: broker ? 4 : config.mqtt.protocolVersion,
        keepalive: config.mqtt.keepalive,
        reconnectMinMs: config.mqtt.reconnectMinMs,
        reconnectMaxMs: config.mqtt.reconnectMaxMs,
        manualConnect: options.offline,
        ...(options.statusWill
          ? {
              will: {
                topic: config.mqtt.statusTopic,
                payload: statusPayload({ state: 'offline', database: config.database.path, control: null, http: null, version: '' }),
                retain: true,
              },
            }
          : {}),
      },
      log.child({ part: 'mqtt' }),
    );
    const bridge = new Bridge(config, log, connection, broker, devicePaths(config, cwd), options.entityMemory, options.home, options.deviceIds);
    if (!options.offline) bridge.readStatus();
    if (embedding && credentialFile && credential) {
      const written = credential;
      bridge.onClose = () => removeCredential(credentialFile, written);
    }
    try {
      bridge.loadDevices();
      registryRef = bridge.registry;
      // Clearing a planted retained command is a publish of our own: the daemon's, not a command's that only reads.
      if (!options.offline && options.announce !== false)
        bridge.sweeper = new RetainedCommandSweeper(bridge.registry, connection, log.child({ part: 'retained-commands' }));
      if (!options.offline) {
        bridge.adapters = createAdapters(config);
        const seen = options.announce === false ? listenOnly(connection, log) : connection;
        for (const adapter of bridge.adapters)
          adapter.start({ connection: seen, registry: bridge.registry, log: log.child({ part: adapter.name }), config, deviceIds: bridge.deviceIds });
      }
      // connectWaitMs 0: go on at once (the connection keeps trying in the background).
      if (!options.offline && options.connectWaitMs !== 0) {
        await connection.waitConnected(options.connectWaitMs ?? 5000).catch((err: MqttError) => {
          log.warn({ err }, 'broker not reachable yet; still trying');
        });
      }
      if (options.simulate && demoEnabled(config)) {
        const { startSimulator } = await import('./simulator/simulator.js');
        bridge.simulator = await startSimulator({
          url,
          devices: bridge.registry.devices().filter((d) => d.source.startsWith(DEMO_DEVICES)),
          log: log.child({ part: 'simulator' }),
        });
      }
    } catch (err) {
      await bridge.close();
      throw err;
    }
    return bridge;
  }

  /**
   * (Re)read the device files. A bad file is reported; at start it is skipped,
   * on a reload it keeps the devices it had when it was last good, so a typo
   * while editing does not take a device away. Returns the device ids added and removed.
   */
  loadDevices(): { added: string[]; removed: string[] } {
    const result = loadDeviceFiles(this.paths);
    this.deviceProblems = result.problems;
    this.deviceFiles = result.files;
    const devices = [...result.devices];
    const ids = new Set(devices.map((d) => d.id));
    const broken = new Set(result.problems.map((p) => p.file));
    for (const p of result.problems) {
      const kept = this.lastGood.has(p.file) && result.files.includes(p.file);
      this.log.error(
        { file: p.file, path: p.path },
        `device file ${kept ? 'has a problem (its last good version stays in use)' : 'skipped'}: ${p.path}: ${p.message}`,
      );
    }
    const good = new Map<string, Device[]>();
    for (const d of result.devices) good.set(d.source, [...(good.get(d.source) ?? []), d]);
    for (const file of broken) {
      const before = this.lastGood.get(file);
      if (!before || !result.files.includes(file)) continue;
      const keep = before.filter((d) => !ids.has(d.id));
      devices.push(...keep);
      good.set(file, before);
    }
    this.lastGood = good;
    const previous = this.fileDeviceIds;
    this.fileDeviceIds = new Set(devices.map((d) => d.id));
    this.registry.setSource(FILE_SOURCE, SOURCE_PRIORITY.files, devices);
    return { added: [...this.fileDeviceIds].filter((id) => !previous.has(id)), removed: [...previous].filter((id) => !this.fileDeviceIds.has(id)) };
  }

  /** Reload the device files whenever they change (not the demo's). Returns the number of folders watched. */
  watchDevices(): number {
    const paths = this.paths.filter((p) => p !== DEMO_DEVICES);
    if (this.watcher || !paths.length) return this.watcher?.folders ?? 0;
    this.watcher = new DeviceFileWatcher(
      paths,
      () => {
        if (this.closed) return;
        const { added, removed } = this.loadDevices();
        this.log.info(
          { devices: this.registry.devices().length, added, removed, problems: this.deviceProblems.length },
          `device files reloaded: ${added.length} added, ${removed.length} removed${this.deviceProblems.length ? `, ${this.deviceProblems.length} problem(s)` : ''}`,
        );
      },
      this.log,
    );
    return this.watcher.folders;
  }

  /**
   * Resolves when every entity has a value (or a frame), or after `timeoutMs`.
   * quietMs: also wait until discovery has added nothing for that long (a fresh
   * connection learns discovered devices from retained messages that come in a burst).
   */
  async settle(timeoutMs: number, { quietMs = 0 } = {}): Promise<number> {
    const pending = () =>
      this.registry.entities().filter((e) => {
        const s = this.cache.get(e.id);
        return !s || (s.value === undefined && !s.frame && Object.keys(s.attributes).length === 0);
      }).length;
    let lastChange = Date.now();
    const changed = () => (lastChange = Date.now());
    this.registry.on('changed', changed);
    const deadline = Date.now() + timeoutMs;
    try {
      while ((pending() > 0 || Date.now() - lastChange < quietMs) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    } finally {
      this.registry.off('changed', changed);
    }
    return this.registry.entities().length - pending();
  }

  /** The daemon that says on this broker that it serves it (retained on hearth/status), if one does. */
  servedBy: DaemonStatus | undefined;
  private said?: Omit<DaemonStatus, 'host' | 'pid' | 'at' | 'state'>;

  private statusHeard?: () => void;

  private readStatus(): void {
    this.connection.subscribe([this.config.mqtt.statusTopic]);
    this.connection.on('message', (topic: string, payload: Buffer) => {
      if (topic !== this.config.mqtt.statusTopic) return;
      this.servedBy = payload.length ? parseStatus(payload) : undefined;
      this.statusHeard?.();
    });
    // Said again on every (re)connect: a broker that restarted without persistence has forgotten it.
    this.connection.on('state', (state: string) => {
      if (state === 'connected' && this.said) void this.publishStatus('online');
    });
  }

  private publishStatus(state: 'online' | 'offline'): Promise<void> {
    return this.connection.publish(this.config.mqtt.statusTopic, statusPayload({ state, ...this.said! }), { qos: 1, retain: true }).catch((err: unknown) => {
      this.log.warn({ err }, `could not say on ${this.config.mqtt.statusTopic} that this daemon is ${state}`);
    });
  }

  /**
   * The status a daemon left on the broker, waiting up to waitMs after connecting for the retained message
   * (none comes when no daemon ever served this broker).
   */
  async daemonStatus(waitMs = 750): Promise<DaemonStatus | undefined> {
    if (this.servedBy || !this.connection.connected) return this.servedBy;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, waitMs);
      this.statusHeard = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.statusHeard = undefined;
    return this.servedBy;
  }

  /** The daemon says on its broker that it serves it, naming where its database, control endpoint and page are. */
  async setStatus(info: { control: string | null; http: string | null; version: string }): Promise<void> {
    this.said = { database: this.config.database.path, ...info };
    if (this.connection.connected) await this.publishStatus('online');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.said && this.connection.connected) await this.publishStatus('offline');
    this.watcher?.close();
    await this.simulator?.close().catch(() => undefined);
    for (const adapter of this.adapters) adapter.stop();
    this.sweeper?.stop();
    this.cache.close();
    await this.connection.close();
    await this.broker?.close();
    this.onClose?.();
  }

  /** What closing must also undo (the broker credential file this process wrote). */
  private onClose?: () => void;
}
