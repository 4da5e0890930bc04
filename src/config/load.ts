// Build the one config object from, in rising precedence: defaults, a YAML
// file, HEARTH_* environment variables and command-line settings. Each layer
// is validated on its own so an error can name where the bad value came from.
//
// hearth.yaml is snake_case (`client_id`, `reject_unauthorized`), as device
// files and the Home Assistant / Zigbee2MQTT world are; the camelCase names of
// earlier versions still work, with a warning naming the new key. The config
// object the code reads keeps its camelCase fields: names are translated here.
// `!secret name` reads secrets.yaml beside the config file, and every secret
// setting (password, api_key, ...) also takes `<name>_file`: a path whose
// content is the value (Docker secrets).
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { parse as parseYaml, YAMLParseError, type ScalarTag } from 'yaml';
import { brokerNodesProblem } from '../mqtt/broker-nodes.js';
import { createAjv, schemaProblems } from '../util/ajv.js';
import { configSchema, discoveryPrefix, type HearthConfig } from './schema.js';

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

/** Settings that hold a secret: each also takes `<name>_file`. */
const SECRET_KEYS = new Set(['password', 'apiKey', 'token', 'secret']);
const FILE_SUFFIX = 'File';

/** The schema with a `<secret>File` sibling beside every secret setting (wherever a part of the code declares one). */
function withSecretFiles(schema: Obj): Obj {
  if (schema.type !== 'object' || !schema.properties) return schema;
  const props: Obj = {};
  for (const [key, sub] of Object.entries(schema.properties as Obj)) {
    props[key] = withSecretFiles(sub as Obj);
    if (SECRET_KEYS.has(key) && (sub as Obj).type === 'string') {
      props[`${key}${FILE_SUFFIX}`] = {
        type: 'string',
        minLength: 1,
        description: `A file whose content is ${snakeName(key)} (Docker secrets); a trailing newline is dropped.`,
      };
    }
  }
  return { ...schema, properties: props };
}

/** `clientId` -> `client_id`. */
export function snakeName(key: string): string {
  return key.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
}

/** An internal dotted path as hearth.yaml spells it: `mqtt.reconnectMinMs` -> `mqtt.reconnect_min_ms`. */
export function yamlPath(path: string): string {
  return path.split('.').map(snakeName).join('.');
}

const loadSchema = withSecretFiles(configSchema as unknown as Obj);
const ajv = createAjv({ useDefaults: false });
const validateLayer = ajv.compile(loadSchema);
const applyDefaults = createAjv({ useDefaults: true }).compile(loadSchema);

interface Leaf {
  path: string[];
  env: string;
  schema: Obj;
}

function snake(segment: string): string {
  return snakeName(segment).toUpperCase();
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
  walk(loadSchema, []);
  return out;
})();

/** Turn a string from the environment or a flag into the type its setting wants. */
function coerce(raw: string, schema: Obj): Json {
  const type = schema.type;
  if (type === 'array') {
    const text = raw.trim();
    if (text.startsWith('[')) return JSON.parse(text) as Json;
    return text
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
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
    out[k] = v && typeof v === 'object' && !Array.isArray(v) && b && typeof b === 'object' && !Array.isArray(b) ? merge(b as Obj, v as Obj) : v;
  }
  return out;
}

function check(layer: Obj, source: string, nameOf: (path: string) => string): void {
  if (validateLayer(layer)) return;
  const [first] = schemaProblems(validateLayer.errors, layer);
  throw new ConfigError(source, nameOf(first.path), first.message);
}

/** Paths in a file are relative to the file; elsewhere to the working directory. */
const PATH_SETTINGS = [
  ['intent', 'sentences'],
  ['devices', 'paths'],
  ['database', 'path'],
  ['audit', 'digestFile'],
  ['audit', 'keyFile'],
  ['mqtt', 'ca'],
  ['mqtt', 'cert'],
  ['mqtt', 'key'],
];

function resolvePaths(layer: Obj, base: string): void {
  for (const path of PATH_SETTINGS) {
    const value = getPath(layer, path);
    const abs = (p: string) => (p === ':memory:' || isAbsolute(p) ? p : resolve(base, p));
    if (typeof value === 'string') setPath(layer, path, abs(value));
    else if (Array.isArray(value))
      setPath(
        layer,
        path,
        value.map((p) => (typeof p === 'string' ? abs(p) : p)),
      );
  }
}

const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * hearth.yaml's snake_case keys -> the config object's camelCase fields. A
 * camelCase key of earlier versions is taken too, and named in `aliases`.
 * Unknown keys are left as written, for the schema check to name.
 */
function fromSnakeCase(layer: unknown, schema: Obj, path: string[], aliases: Array<{ old: string; now: string }>, source: string): unknown {
  if (!isObj(layer) || schema.type !== 'object' || !isObj(schema.properties)) return layer;
  const props = schema.properties;
  const bySnake = new Map(Object.keys(props).map((k) => [snakeName(k), k]));
  const out: Obj = {};
  for (const [key, value] of Object.entries(layer)) {
    let field = bySnake.get(key) ?? key;
    if (!bySnake.has(key) && key in props) {
      field = key;
      aliases.push({ old: [...path, key].map(snakeName).slice(0, -1).concat(key).join('.'), now: [...path, key].map(snakeName).join('.') });
    }
    if (field in out) {
      throw new ConfigError(
        source,
        [...path, field].map(snakeName).join('.'),
        `is given twice (as ${snakeName(field)} and ${field}); keep ${snakeName(field)}`,
      );
    }
    out[field] = props[field] ? fromSnakeCase(value, props[field] as Obj, [...path, field], aliases, source) : value;
  }
  return out;
}

/** A `!secret name` in hearth.yaml, until secrets.yaml is read. */
class SecretRef {
  constructor(readonly name: string) {}
}

const SECRET_TAG: ScalarTag = {
  tag: '!secret',
  identify: (v) => v instanceof SecretRef,
  resolve: (text: string) => new SecretRef(text.trim()),
};

/** Replace every `!secret name` with its value from secrets.yaml beside the config file. */
function resolveSecrets(layer: Obj, configFile: string): void {
  const secretsFile = join(dirname(configFile), 'secrets.yaml');
  let secrets: Obj | undefined;
  const load = (name: string, field: string): Obj => {
    if (secrets) return secrets;
    if (!existsSync(secretsFile)) throw new ConfigError(secretsFile, '(file)', `does not exist; ${field} in ${configFile} asks for !secret ${name}`);
    let parsed: unknown;
    try {
      parsed = parseYaml(readFileSync(secretsFile, 'utf8'));
    } catch (err) {
      const where = err instanceof YAMLParseError && err.linePos ? `line ${err.linePos[0].line}` : '(file)';
      throw new ConfigError(secretsFile, where, `not valid YAML: ${(err as Error).message.split('\n')[0]}`);
    }
    if (!isObj(parsed)) throw new ConfigError(secretsFile, '(top level)', 'must be a mapping of secret names to values');
    secrets = parsed;
    return secrets;
  };
  const walk = (node: unknown, path: string[]): unknown => {
    if (node instanceof SecretRef) {
      const field = path.join('.');
      const all = load(node.name, field);
      if (!node.name || !(node.name in all))
        throw new ConfigError(secretsFile, node.name || '(empty name)', `no such secret (${field} in ${configFile} asks for it)`);
      const value = all[node.name];
      if (value === null || typeof value === 'object')
        throw new ConfigError(secretsFile, node.name, `must be a string, number or boolean (for ${field} in ${configFile})`);
      return value;
    }
    if (Array.isArray(node)) return node.map((v, i) => walk(v, [...path, String(i)]));
    if (isObj(node)) {
      for (const [k, v] of Object.entries(node)) node[k] = walk(v, [...path, k]);
    }
    return node;
  };
  walk(layer, []);
}

/** `password_file: /run/secrets/mqtt` -> password: the file's content (trailing newline dropped). */
function readSecretFiles(layer: Obj, source: string, nameOf: (path: string) => string, base: string, path: string[] = []): void {
  for (const [key, value] of Object.entries(layer)) {
    if (isObj(value)) {
      readSecretFiles(value, source, nameOf, base, [...path, key]);
      continue;
    }
    const secret = key.endsWith(FILE_SUFFIX) ? key.slice(0, -FILE_SUFFIX.length) : '';
    if (!SECRET_KEYS.has(secret) || typeof value !== 'string') continue;
    const here = (k: string) => nameOf([...path, k].join('.'));
    if (layer[secret] !== undefined) throw new ConfigError(source, here(secret), `is set twice: give either it or ${here(key)}, not both`);
    const file = isAbsolute(value) ? value : resolve(base, value);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new ConfigError(source, here(key), `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    layer[secret] = text.replace(/\r?\n$/, '');
    delete layer[key];
  }
}

export interface LoadOptions {
  cwd?: string;
  /** Explicit config file; an explicit file that does not exist is an error. */
  file?: string;
  env?: NodeJS.ProcessEnv;
  /** Dotted setting -> raw string, from command-line flags (snake_case or camelCase). */
  flags?: Record<string, string | string[] | boolean | number>;
  /** Where warnings go (old key names); default: stderr. */
  warn?: (message: string) => void;
}

export interface LoadedConfig {
  config: HearthConfig;
  /** The config file that was read, if any. */
  file?: string;
  /** What was said through `warn` (old key names in the file). */
  warnings: string[];
}

export function loadConfig(options: LoadOptions = {}): LoadedConfig {
  const cwd = options.cwd ?? process.cwd();
  const env = options.env ?? process.env;

  // 1. The file: --config, HEARTH_CONFIG, or ./hearth.yaml when present.
  const explicit = options.file ?? env.HEARTH_CONFIG;
  const file = explicit ? resolve(cwd, explicit) : resolve(cwd, 'hearth.yaml');
  let fromFile: Obj = {};
  let fileRead: string | undefined;
  const warnings: string[] = [];
  const warn = (message: string) => {
    warnings.push(message);
    (options.warn ?? ((m: string) => process.stderr.write(`hearth: warning: ${m}\n`)))(message);
  };
  if (existsSync(file)) {
    let parsed: unknown;
    try {
      parsed = parseYaml(readFileSync(file, 'utf8'), { customTags: [SECRET_TAG] });
    } catch (err) {
      const where = err instanceof YAMLParseError && err.linePos ? `line ${err.linePos[0].line}` : '(file)';
      throw new ConfigError(file, where, `not valid YAML: ${(err as Error).message.split('\n')[0]}`);
    }
    if (parsed === null || parsed === undefined) parsed = {};
    if (typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new ConfigError(file, '(top level)', 'must be a mapping of settings');
    }
    resolveSecrets(parsed as Obj, file);
    const aliases: Array<{ old: string; now: string }> = [];
    fromFile = fromSnakeCase(parsed, loadSchema, [], aliases, file) as Obj;
    for (const a of aliases) warn(`${file}: ${a.old} is the old name of ${a.now}; write ${a.now} (the old name will stop working in a later version)`);
    check(fromFile, file, yamlPath);
    resolvePaths(fromFile, dirname(file));
    readSecretFiles(fromFile, file, yamlPath, dirname(file));
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
  // An item of a list (`http.trustedOrigins[0]`) is named by its list's variable.
  check(fromEnv, 'environment', (p) => envByPath.get(p.replace(/(\[\d+\])+$/, '')) ?? p);
  resolvePaths(fromEnv, cwd);
  readSecretFiles(fromEnv, 'environment', (p) => envByPath.get(p) ?? `HEARTH_${p.split('.').map(snake).join('_')}`, cwd);

  // 3. Command-line settings.
  const fromFlags: Obj = {};
  const flagByPath = new Map<string, string>();
  for (const [dotted, raw] of Object.entries(options.flags ?? {})) {
    const leaf = configLeaves.find((l) => l.path.join('.') === dotted || yamlPath(l.path.join('.')) === dotted);
    if (!leaf) throw new ConfigError('command line', dotted, 'is not a known setting');
    const value = typeof raw === 'string' ? coerce(raw, leaf.schema) : Array.isArray(raw) ? raw : (raw as Json);
    setPath(fromFlags, leaf.path, value);
    flagByPath.set(leaf.path.join('.'), dotted);
  }
  check(fromFlags, 'command line', (p) => flagByPath.get(p) ?? p);
  resolvePaths(fromFlags, cwd);
  readSecretFiles(fromFlags, 'command line', (p) => flagByPath.get(p) ?? yamlPath(p), cwd);

  const merged = merge(merge(fromFile, fromEnv), fromFlags);
  applyDefaults(merged);
  const config = merged as unknown as HearthConfig;
  // One way of writing each discovery prefix for every part that reads it (`zigbee2mqtt/` is `zigbee2mqtt`).
  for (const source of ['homeassistant', 'zigbee2mqtt', 'homie'] as const) {
    config.discovery[source].prefix = discoveryPrefix(source, config.discovery[source].prefix);
  }
  if (config.database.path !== ':memory:' && !isAbsolute(config.database.path)) {
    config.database.path = resolve(cwd, config.database.path);
  }
  if (config.agent.provider === 'openai' && !config.agent.model) {
    throw new ConfigError('config', 'agent.model', 'is required with agent.provider openai (the model id your server serves, e.g. llama3.2:3b)');
  }
  // The schema's pattern lets `mqtt://[bad` through; MQTT.js would throw at connect.
  const brokerProblem = config.mqtt.url ? brokerNodesProblem(config.mqtt.url) : undefined;
  if (brokerProblem) throw new ConfigError('config', 'mqtt.url', brokerProblem);
  // The offline model reads this folder at its first turn; a wrong path is said at start, not to the first speaker.
  const sentences = config.intent.sentences;
  if (sentences && !(existsSync(sentences) && statSync(sentences).isDirectory())) {
    throw new ConfigError('config', 'intent.sentences', `${sentences} is not a folder (your own sentence files go there; see docs/sentences.md)`);
  }
  // TLS files are read when the broker connection opens; a missing one is named here, with its setting, before anything starts.
  for (const key of ['ca', 'cert', 'key'] as const) {
    const file = config.mqtt.url ? config.mqtt[key] : undefined;
    if (file && !existsSync(file)) throw new ConfigError('config', `mqtt.${key}`, `no such file ${file}`);
  }
  if (config.mqtt.reconnectMaxMs < config.mqtt.reconnectMinMs) {
    throw new ConfigError('config', 'mqtt.reconnect_max_ms', 'must not be below mqtt.reconnect_min_ms');
  }
  return { config, file: fileRead, warnings };
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
