// Build the one config object from, in rising precedence: defaults, a YAML
// file, HEARTH_* environment variables and command-line settings. Each layer
// is validated on its own so an error can name where the bad value came from.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { createAjv, schemaProblems } from '../util/ajv.js';
import { configSchema, type HearthConfig } from './schema.js';

export class ConfigError extends Error {
  constructor(
    /** `hearth.yaml`, `environment` or `command line`. */
    readonly source: string,
    /** Dotted field path, or the env var / flag name. */
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${source}: ${field}: ${problem}`);
    this.name = 'ConfigError';
  }
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Obj = Record<string, unknown>;

const ajv = createAjv({ useDefaults: false });
const validateLayer = ajv.compile(configSchema);
const applyDefaults = createAjv({ useDefaults: true }).compile(configSchema);

interface Leaf {
  path: string[];
  env: string;
  schema: Obj;
}

function snake(segment: string): string {
  return segment.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
}

/** Every leaf setting of the schema, with its environment variable name. */
export const configLeaves: Leaf[] = (() => {
  const out: Leaf[] = [];
  const walk = (schema: Obj, path: string[]) => {
    const props = schema.properties as Obj | undefined;
    if (schema.type === 'object' && props) {
      for (const [key, sub] of Object.entries(props)) walk(sub as Obj, [...path, key]);
      return;
    }
    out.push({ path, env: `HEARTH_${path.map(snake).join('_')}`, schema });
  };
  walk(configSchema as unknown as Obj, []);
  return out;
})();

/** Turn a string from the environment or a flag into the type its setting wants. */
function coerce(raw: string, schema: Obj): Json {
  const type = schema.type;
  if (type === 'array') {
    const text = raw.trim();
    if (text.startsWith('[')) return JSON.parse(text) as Json;
    return text.split(',').map((s) => s.trim()).filter(Boolean);
  }
  if (type === 'integer' || type === 'number') return /^-?\d+(\.\d+)?$/.test(raw.trim()) ? Number(raw) : raw;
  if (type === 'boolean') return parseBool(raw);
  if (Array.isArray(schema.enum)) {
    const asBool = parseBool(raw);
    if (typeof asBool === 'boolean' && schema.enum.includes(asBool)) return asBool;
    if (/^\d+$/.test(raw) && schema.enum.includes(Number(raw))) return Number(raw);
  }
  return raw;
}

function parseBool(raw: string): Json {
  const v = raw.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off'].includes(v)) return false;
  return raw;
}

function setPath(target: Obj, path: string[], value: unknown): void {
  let cur = target;
  for (const seg of path.slice(0, -1)) {
    if (typeof cur[seg] !== 'object' || cur[seg] === null) cur[seg] = {};
    cur = cur[seg] as Obj;
  }
  cur[path[path.length - 1]] = value;
}

function getPath(source: Obj, path: string[]): unknown {
  let cur: unknown = source;
  for (const seg of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Obj)[seg];
  }
  return cur;
}

function merge(base: Obj, over: Obj): Obj {
  const out: Obj = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    out[k] =
      v && typeof v === 'object' && !Array.isArray(v) && b && typeof b === 'object' && !Array.isArray(b)
        ? merge(b as Obj, v as Obj)
        : v;
  }
  return out;
}

function check(layer: Obj, source: string, nameOf: (path: string) => string): void {
  if (validateLayer(layer)) return;
  const [first] = schemaProblems(validateLayer.errors, layer);
  throw new ConfigError(source, nameOf(first.path), first.message);
}

/** Paths in a file are relative to the file; elsewhere to the working directory. */
const PATH_SETTINGS = [['intent', 'sentences'], ['devices', 'paths'], ['database', 'path'], ['audit', 'digestFile'], ['audit', 'keyFile'], ['mqtt', 'ca'], ['mqtt', 'cert'], ['mqtt', 'key']];

function resolvePaths(layer: Obj, base: string): void {
  for (const path of PATH_SETTINGS) {
    const value = getPath(layer, path);
    const abs = (p: string) => (p === ':memory:' || isAbsolute(p) ? p : resolve(base, p));
    if (typeof value === 'string') setPath(layer, path, abs(value));
    else if (Array.isArray(value)) setPath(layer, path, value.map((p) => (typeof p === 'string' ? abs(p) : p)));
  }
}

export interface LoadOptions {
  cwd?: string;
  /** Explicit config file; an explicit file that does not exist is an error. */
  file?: string;
  env?: NodeJS.ProcessEnv;
  /** Dotted setting -> raw string, from command-line flags. */
  flags?: Record<string, string | string[] | boolean | number>;
}

export interface LoadedConfig {
  config: HearthConfig;
  /** The config file that was read, if any. */
  file?: string;
}

export function loadConfig(options: LoadOptions = {}): LoadedConfig {
  const cwd = options.cwd ?? process.cwd();
  const env = options.env ?? process.env;

  // 1. The file: --config, HEARTH_CONFIG, or ./hearth.yaml when present.
  const explicit = options.file ?? env.HEARTH_CONFIG;
  const file = explicit ? resolve(cwd, explicit) : resolve(cwd, 'hearth.yaml');
  let fromFile: Obj = {};
  let fileRead: string | undefined;
  if (existsSync(file)) {
    let parsed: unknown;
    try {
      parsed = parseYaml(readFileSync(file, 'utf8'));
    } catch (err) {
      const where = err instanceof YAMLParseError && err.linePos ? `line ${err.linePos[0].line}` : '(file)';
      throw new ConfigError(file, where, `not valid YAML: ${(err as Error).message.split('\n')[0]}`);
    }
    if (parsed === null || parsed === undefined) parsed = {};
    if (typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new ConfigError(file, '(top level)', 'must be a mapping of settings');
    }
    fromFile = parsed as Obj;
    check(fromFile, file, (p) => p);
    resolvePaths(fromFile, dirname(file));
    fileRead = file;
  } else if (explicit) {
    throw new ConfigError(file, '(file)', 'does not exist');
  }

  // 2. The environment.
  const fromEnv: Obj = {};
  const envByPath = new Map<string, string>();
  for (const leaf of configLeaves) {
    const raw = env[leaf.env];
    if (raw === undefined || raw === '') continue;
    let value: Json;
    try {
      value = coerce(raw, leaf.schema);
    } catch {
      throw new ConfigError('environment', leaf.env, 'must be a JSON array or a comma-separated list');
    }
    setPath(fromEnv, leaf.path, value);
    envByPath.set(leaf.path.join('.'), leaf.env);
  }
  check(fromEnv, 'environment', (p) => envByPath.get(p) ?? p);
  resolvePaths(fromEnv, cwd);

  // 3. Command-line settings.
  const fromFlags: Obj = {};
  for (const [dotted, raw] of Object.entries(options.flags ?? {})) {
    const leaf = configLeaves.find((l) => l.path.join('.') === dotted);
    if (!leaf) throw new ConfigError('command line', dotted, 'is not a known setting');
    const value =
      typeof raw === 'string' ? coerce(raw, leaf.schema) : Array.isArray(raw) ? raw : (raw as Json);
    setPath(fromFlags, leaf.path, value);
  }
  check(fromFlags, 'command line', (p) => p);
  resolvePaths(fromFlags, cwd);

  const merged = merge(merge(fromFile, fromEnv), fromFlags);
  applyDefaults(merged);
  const config = merged as unknown as HearthConfig;
  if (config.database.path !== ':memory:' && !isAbsolute(config.database.path)) {
    config.database.path = resolve(cwd, config.database.path);
  }
  if (config.agent.provider === 'openai' && !config.agent.model) {
    throw new ConfigError('config', 'agent.model', 'is required with agent.provider openai (the model id your server serves, e.g. llama3.2:3b)');
  }
  if (config.mqtt.reconnectMaxMs < config.mqtt.reconnectMinMs) {
    throw new ConfigError('config', 'mqtt.reconnectMaxMs', 'must not be below mqtt.reconnectMinMs');
  }
  return { config, file: fileRead };
}

/** `--set a.b=c` pairs into the flags map. */
export function parseSetFlags(pairs: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new ConfigError('command line', `--set ${pair}`, 'must look like key.path=value');
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}
