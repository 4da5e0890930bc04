// The settings every command takes, and turning them into the one config.
import { Command, Option } from 'commander';
import { ConfigError, loadConfig, parseSetFlags, type LoadedConfig } from '../config/load.js';
import { createLogger, type Logger } from '../log.js';

export interface CommonFlags {
  config?: string;
  mqttUrl?: string;
  brokerPort?: string;
  devices?: string[];
  db?: string;
  demo?: boolean;
  logLevel?: string;
  set?: string[];
}

export function withConfigOptions(cmd: Command): Command {
  return cmd
    .option('-c, --config <file>', 'config file (default: ./hearth.yaml when present; env HEARTH_CONFIG)')
    .option('--mqtt-url <url>', 'broker URL: mqtt://, mqtts://, ws://, wss:// (none: the embedded broker)')
    .option('--broker-port <port>', 'port of the embedded broker (default 1883)')
    .option('--devices <paths...>', 'device files or folders of *.yaml')
    .option('--db <file>', 'SQLite database file (default ./hearth.db)')
    .option('--demo', 'load the demo home and run its simulator')
    .option('--no-demo', 'do not load the demo home')
    .addOption(new Option('--log-level <level>', 'log level').choices(['trace', 'debug', 'info', 'warn', 'error', 'silent']))
    .option('--set <key=value...>', 'any setting by its path, e.g. --set tools.shape=grouped');
}

export function configFromFlags(flags: CommonFlags, overrides: Record<string, string | boolean> = {}): LoadedConfig {
  const set: Record<string, string | string[] | boolean> = { ...parseSetFlags(flags.set ?? []) };
  if (flags.mqttUrl) set['mqtt.url'] = flags.mqttUrl;
  if (flags.brokerPort) set['mqtt.embedded.port'] = flags.brokerPort;
  if (flags.devices) set['devices.paths'] = flags.devices;
  if (flags.db) set['database.path'] = flags.db;
  if (flags.demo !== undefined) set.demo = flags.demo;
  if (flags.logLevel) set['log.level'] = flags.logLevel;
  return loadConfig({ file: flags.config, flags: { ...set, ...overrides } });
}

/** Load the config or stop with the file, field and problem. */
export function configOrExit(flags: CommonFlags, overrides?: Record<string, string | boolean>): LoadedConfig {
  try {
    return configFromFlags(flags, overrides);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`hearth: configuration error: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

export function loggerFor(loaded: LoadedConfig, levelOverride?: string): Logger {
  return createLogger({ level: levelOverride ?? loaded.config.log.level, pretty: loaded.config.log.pretty });
}
