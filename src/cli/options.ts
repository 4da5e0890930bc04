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
      .option('--verbose', 'say how the command reached the home (the running daemon, or on its own)')
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

export async function loggerFor(loaded: LoadedConfig, levelOverride?: string): Promise<Logger> {
  const { createLogger } = await import('../log.js');
  return createLogger({ level: levelOverride ?? loaded.config.log.level, pretty: loaded.config.log.pretty });
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

/** The database path, quickly when it can be, else from the whole config (stopping on a config error). */
export async function databasePathOrExit(flags: CommonFlags): Promise<string> {
  return (await databasePath(flags)) ?? (await configOrExit(flags)).config.database.path;
}
