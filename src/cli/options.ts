// The settings every command takes, and turning them into the one config.
// Config loading (ajv, yaml) and the logger (pino) are imported when a command runs,
// so a command that only asks the daemon stays quick to start.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { type Command, Option } from 'commander';
import { CliFailure, collect } from './failure.js';
import type { LoadedConfig } from '../config/load.js';
import type { Logger } from '../log.js';

export interface CommonFlags {
  config?: string;
  mqttUrl?: string;
  brokerPort?: string;
  devices?: string[];
  db?: string;
  demo?: boolean;
  logLevel?: string;
  set?: string[];
  verbose?: boolean;
  standalone?: boolean;
}

export function withConfigOptions(cmd: Command): Command {
  return (
    cmd
      // Only HEARTH_CONFIG is read through commander: the HEARTH_* variables of settings are read by
      // loadConfig, so an error names the variable and --set still wins over them.
      .addOption(new Option('-c, --config <file>', 'config file (default: ./hearth.yaml when present)').env('HEARTH_CONFIG'))
      .option('--mqtt-url <url>', 'broker URL: mqtt://, mqtts://, ws://, wss:// (none: the embedded broker; env HEARTH_MQTT_URL)')
      .option('--broker-port <port>', 'port of the embedded broker (default 1883; env HEARTH_MQTT_EMBEDDED_PORT)')
      .option('--devices <path>', 'a device file or folder of *.yaml (repeat for more; env HEARTH_DEVICES_PATHS)', collect)
      .option('--db <file>', 'SQLite database file (default ./hearth.db; env HEARTH_DATABASE_PATH)')
      .option('--demo', 'load the demo home and run its simulator')
      .option('--no-demo', 'do not load the demo home')
      .addOption(new Option('--log-level <level>', 'log level (env HEARTH_LOG_LEVEL)').choices(['trace', 'debug', 'info', 'warn', 'error', 'silent']))
      .option('--set <key=value>', 'any setting by its path, e.g. --set tools.shape=grouped (repeat for more)', collect)
      .option('--verbose', 'say how the command reached the home (the running daemon, or on its own), and show errors with their stack traces')
      .option('--standalone', 'do not ask a running daemon: open the database and broker from this process')
  );
}

/** `--as <principal>`, read from HEARTH_PRINCIPAL when not given (commander's .env()). */
export function asOption(description: string): Option {
  return new Option('--as <principal>', description).env('HEARTH_PRINCIPAL');
}

/** The principal of --as (from HEARTH_PRINCIPAL: trimmed, empty meaning none) and whether it came from there. */
export function principalFlag(cmd: Command): { as?: string; fromEnv: boolean } {
  const raw = cmd.getOptionValue('as') as string | undefined;
  const fromEnv = cmd.getOptionValueSource('as') === 'env';
  return { as: fromEnv ? raw?.trim() || undefined : raw, fromEnv: fromEnv && !!raw?.trim() };
}

export async function configFromFlags(flags: CommonFlags, overrides: Record<string, string | boolean> = {}): Promise<LoadedConfig> {
  const { loadConfig, parseSetFlags } = await import('../config/load.js');
  const set: Record<string, string | string[] | boolean> = { ...parseSetFlags(flags.set ?? []) };
  if (flags.mqttUrl) set['mqtt.url'] = flags.mqttUrl;
  if (flags.brokerPort) set['mqtt.embedded.port'] = flags.brokerPort;
  if (flags.devices) set['devices.paths'] = flags.devices;
  if (flags.db) set['database.path'] = flags.db;
  if (flags.demo !== undefined) set.demo = flags.demo;
  if (flags.logLevel) set['log.level'] = flags.logLevel;
  return loadConfig({ file: flags.config, flags: { ...set, ...overrides } });
}

/** Load the config, or fail (exit 2) with the file, field and problem. */
export async function configOrExit(flags: CommonFlags, overrides?: Record<string, string | boolean>): Promise<LoadedConfig> {
  const { ConfigError } = await import('../config/load.js');
  try {
    return await configFromFlags(flags, overrides);
  } catch (err) {
    if (err instanceof ConfigError) throw new CliFailure(`configuration error: ${err.message}`, 2);
    throw err;
  }
}

/** The command's logger; at a terminal, stack traces only with --verbose (any command takes it). */
export async function loggerFor(loaded: LoadedConfig, levelOverride?: string, verbose = process.argv.includes('--verbose')): Promise<Logger> {
  const { createLogger } = await import('../log.js');
  return createLogger({ level: levelOverride ?? loaded.config.log.level, pretty: loaded.config.log.pretty, stacks: verbose });
}

/**
 * The database path loadConfig would give (flags over HEARTH_DATABASE_PATH over the
 * config file over ./hearth.db), found without loading the config machinery (ajv):
 * enough to find the daemon. undefined when only a full load can tell (--set, or a
 * config file that does not read cleanly); the full load then also reports the problem.
 */
export async function databasePath(flags: CommonFlags, env = process.env, cwd = process.cwd()): Promise<string | undefined> {
  const abs = (p: string, base: string) => (p === ':memory:' || isAbsolute(p) ? p : resolve(base, p));
  if (flags.set?.length) return undefined;
  if (flags.db) return abs(flags.db, cwd);
  if (env.HEARTH_DATABASE_PATH) return abs(env.HEARTH_DATABASE_PATH, cwd);
  const explicit = flags.config ?? env.HEARTH_CONFIG;
  const file = resolve(cwd, explicit ?? 'hearth.yaml');
  if (!existsSync(file)) return explicit ? undefined : abs('hearth.db', cwd);
  try {
    const { parse } = await import('yaml');
    const parsed = parse(readFileSync(file, 'utf8')) as { database?: { path?: unknown } } | null;
    const path = parsed?.database?.path;
    if (path === undefined) return abs('hearth.db', cwd);
    return typeof path === 'string' && path ? abs(path, dirname(file)) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The database path, quickly when it can be, else from the whole config (stopping on a config error). When
 * nothing names a database (no --db, HEARTH_DATABASE_PATH, config file or --set) and no daemon runs for
 * ./hearth.db, the one daemon running for this user is the home, wherever it was started: a command run from
 * another folder lands in that home's audit, never in a stray ./hearth.db.
 */
export async function databasePathOrExit(flags: CommonFlags, env = process.env, cwd = process.cwd()): Promise<string> {
  const path = (await databasePath(flags, env, cwd)) ?? (await configOrExit(flags)).config.database.path;
  const named = !!(flags.db || env.HEARTH_DATABASE_PATH || flags.config || env.HEARTH_CONFIG || flags.set?.length || existsSync(resolve(cwd, 'hearth.yaml')));
  if (named || flags.standalone) return path;
  const { runningDaemons } = await import('../daemon/running.js');
  const running = runningDaemons(env);
  if (running.some((d) => d.db === path)) return path;
  // --broker-port / --mqtt-url pick among several.
  const { sameBroker } = await import('../mqtt/broker-credential-file.js');
  const wanted = flags.mqttUrl ?? (flags.brokerPort ? `mqtt://127.0.0.1:${flags.brokerPort}` : undefined);
  const candidates = wanted ? running.filter((d) => sameBroker(d.broker, wanted)) : running;
  if (candidates.length === 1) {
    if (flags.verbose) process.stderr.write(`hearth: no database named here; using the running daemon's (${candidates[0].db})\n`);
    return candidates[0].db;
  }
  if (candidates.length > 1) {
    const { CliFailure } = await import('./failure.js');
    throw new CliFailure(`several Hearth daemons run: ${candidates.map((d) => `${d.db} (broker ${d.broker})`).join('; ')}; say which with --db <file>`, 2);
  }
  return path;
}

/**
 * A command about to act on its own (no daemon for its database) must not command a broker a running daemon
 * serves: its rows would land in another audit than that home's. Stops naming the daemon's database.
 */
/**
 * The same, for a daemon of another user or machine: once connected, a command acting on its own reads the
 * broker's retained hearth/status, and refuses when a running daemon of another home serves it.
 */
export async function refuseRemoteDaemon(bridge: import('../bridge.js').Bridge): Promise<void> {
  const s = await bridge.daemonStatus();
  if (s?.state !== 'online') return;
  const { isThisHome } = await import('../mqtt/daemon-status.js');
  if (isThisHome(s, bridge.config.database.path)) return;
  const { CliFailure } = await import('./failure.js');
  throw new CliFailure(
    `the broker ${bridge.connection.options.url} is served by the Hearth daemon for ${s.database} on ${s.host} (pid ${s.pid}); run the command where that daemon runs, so it lands in that home's audit (nothing was sent)`,
    2,
  );
}

export async function refuseServedBroker(dbPath: string, brokerUrl: string, env = process.env): Promise<void> {
  const { runningDaemons } = await import('../daemon/running.js');
  const { sameBroker } = await import('../mqtt/broker-credential-file.js');
  const served = runningDaemons(env).find((d) => d.db !== dbPath && sameBroker(d.broker, brokerUrl));
  if (!served) return;
  const { CliFailure } = await import('./failure.js');
  throw new CliFailure(
    `the broker ${served.broker} is served by the Hearth daemon for ${served.db} (pid ${served.pid}); run this with --db ${served.db} so it lands in that home's audit (nothing was sent)`,
    2,
  );
}
