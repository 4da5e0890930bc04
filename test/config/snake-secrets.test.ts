// hearth.yaml as Home Assistant users write it: snake_case keys (the camelCase
// names of earlier versions still work, with a warning naming the new key),
// `!secret name` from secrets.yaml beside the file, and `<secret>_file` for
// Docker secrets; each with its errors naming file and key.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { runHearth } from '../helpers/cli.js';

const root = mkdtempSync(join(tmpdir(), 'hearth-config-snake-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

/** A fresh folder with these files in it; returns the folder. */
function folder(files: Record<string, string>): string {
  const dir = join(root, `case-${++n}`);
  mkdirSync(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

function load(dir: string, env: NodeJS.ProcessEnv = {}, flags: Record<string, string> = {}) {
  const warnings: string[] = [];
  const loaded = loadConfig({ cwd: dir, env, flags, warn: (m) => warnings.push(m) });
  return { ...loaded, warned: warnings };
}

function errorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a ConfigError');
}

const SNAKE = `mqtt:
  url: mqtts://broker.lan:8883
  client_id: hearth-kitchen
  reject_unauthorized: false
  reconnect_min_ms: 200
  protocol_version: 5
tools:
  group_above: 12
audit:
  key_file: keys/audit.key
  digest_file: audit.digest
agent:
  provider: openai
  model: llama3.2:3b
  base_url: http://127.0.0.1:11434/v1
  api_key: sk-local
  max_rounds: 4
http:
  mcp_path: /mcp
  trusted_origins: [https://home.example.org]
  events:
    max_streams_per_token: 3
`;

describe('hearth.yaml in snake_case', () => {
  it('reads every snake_case key into the config, with no warning', () => {
    const dir = folder({ 'hearth.yaml': SNAKE });
    const { config, warned } = load(dir);
    assert.deepEqual(warned, []);
    assert.equal(config.mqtt.clientId, 'hearth-kitchen');
    assert.equal(config.mqtt.rejectUnauthorized, false);
    assert.equal(config.mqtt.reconnectMinMs, 200);
    assert.equal(config.mqtt.protocolVersion, 5);
    assert.equal(config.tools.groupAbove, 12);
    assert.equal(config.audit.keyFile, join(dir, 'keys/audit.key'), 'paths stay relative to the file');
    assert.equal(config.audit.digestFile, join(dir, 'audit.digest'));
    assert.equal(config.agent.baseUrl, 'http://127.0.0.1:11434/v1');
    assert.equal(config.agent.apiKey, 'sk-local');
    assert.equal(config.agent.maxRounds, 4);
    assert.deepEqual(config.http.trustedOrigins, ['https://home.example.org']);
    assert.equal(config.http.events.maxStreamsPerToken, 3);
  });

  it('takes the camelCase names of earlier versions, warning with the new key for each', () => {
    const camel = 'mqtt:\n  clientId: old-style\n  rejectUnauthorized: false\ntools:\n  groupAbove: 9\nagent:\n  baseUrl: http://10.0.0.2:1337/v1\n';
    const dir = folder({ 'hearth.yaml': camel });
    const { config, warned } = load(dir);
    assert.equal(config.mqtt.clientId, 'old-style');
    assert.equal(config.mqtt.rejectUnauthorized, false);
    assert.equal(config.tools.groupAbove, 9);
    assert.equal(config.agent.baseUrl, 'http://10.0.0.2:1337/v1');
    const file = join(dir, 'hearth.yaml');
    assert.deepEqual(warned, [
      `${file}: mqtt.clientId is the old name of mqtt.client_id; write mqtt.client_id (the old name will stop working in a later version)`,
      `${file}: mqtt.rejectUnauthorized is the old name of mqtt.reject_unauthorized; write mqtt.reject_unauthorized (the old name will stop working in a later version)`,
      `${file}: tools.groupAbove is the old name of tools.group_above; write tools.group_above (the old name will stop working in a later version)`,
      `${file}: agent.baseUrl is the old name of agent.base_url; write agent.base_url (the old name will stop working in a later version)`,
    ]);
  });

  it('the CLI prints the warning line on stderr and goes on', async () => {
    const dir = folder({ 'hearth.yaml': 'tools:\n  groupAbove: 9\n' });
    const { code, stderr } = await runHearth(['policy', 'list', '--db', join(dir, 'h.db')], { cwd: dir });
    assert.equal(code, 0, stderr);
    assert.match(stderr, /^hearth: warning: .*hearth\.yaml: tools\.groupAbove is the old name of tools\.group_above; write tools\.group_above/m);
  });

  it('refuses a key given in both spellings, and names wrong values by their snake_case key', () => {
    const twice = folder({ 'hearth.yaml': 'mqtt:\n  client_id: a\n  clientId: b\n' });
    const both = errorOf(() => load(twice));
    assert.equal(both.source, join(twice, 'hearth.yaml'));
    assert.equal(both.field, 'mqtt.client_id');
    assert.match(both.problem, /given twice \(as client_id and clientId\); keep client_id/);
    const wrong = folder({ 'hearth.yaml': 'mqtt:\n  reconnect_min_ms: 1\n' });
    const err = errorOf(() => load(wrong));
    assert.equal(err.field, 'mqtt.reconnect_min_ms');
    assert.match(err.problem, /must be >= 50/);
    const unknown = errorOf(() => load(folder({ 'hearth.yaml': 'mqtt:\n  client_idd: x\n' })));
    assert.equal(unknown.field, 'mqtt.client_idd');
  });

  it('takes --set in snake_case as well as the old spelling; the environment already was', () => {
    const dir = folder({});
    assert.equal(load(dir, {}, { 'tools.group_above': '5' }).config.tools.groupAbove, 5);
    assert.equal(load(dir, {}, { 'tools.groupAbove': '6' }).config.tools.groupAbove, 6);
    assert.deepEqual(load(dir, { HEARTH_HTTP_TRUSTED_ORIGINS: 'https://a.example,https://b.example:8443' }).config.http.trustedOrigins, [
      'https://a.example',
      'https://b.example:8443',
    ]);
    const bad = errorOf(() => load(dir, { HEARTH_HTTP_TRUSTED_ORIGINS: 'https://a.example/page' }));
    assert.equal(bad.field, 'HEARTH_HTTP_TRUSTED_ORIGINS');
  });
});

describe('!secret and *_file', () => {
  it('!secret name reads secrets.yaml beside the config file', () => {
    const dir = folder({
      'hearth.yaml': 'mqtt:\n  url: mqtt://broker.lan\n  username: hearth\n  password: !secret mqtt_password\nagent:\n  api_key: !secret llm_key\n',
      'secrets.yaml': 'mqtt_password: "p@ss word"\nllm_key: sk-123\n',
    });
    const { config } = load(dir);
    assert.equal(config.mqtt.password, 'p@ss word');
    assert.equal(config.agent.apiKey, 'sk-123');
  });

  it('a missing secrets.yaml or secret stops start-up naming the file and the key', () => {
    const noFile = folder({ 'hearth.yaml': 'mqtt:\n  password: !secret mqtt_password\n' });
    const missing = errorOf(() => load(noFile));
    assert.equal(missing.source, join(noFile, 'secrets.yaml'));
    assert.match(missing.message, /secrets\.yaml: \(file\): does not exist; mqtt\.password in .*hearth\.yaml asks for !secret mqtt_password/);

    const noKey = folder({ 'hearth.yaml': 'mqtt:\n  password: !secret mqtt_pasword\n', 'secrets.yaml': 'mqtt_password: x\n' });
    const err = errorOf(() => load(noKey));
    assert.equal(err.source, join(noKey, 'secrets.yaml'));
    assert.equal(err.field, 'mqtt_pasword');
    assert.match(err.problem, /^no such secret \(mqtt\.password in .*hearth\.yaml asks for it\)$/);
  });

  it('<secret>_file reads the value from a file (trailing newline dropped), in the file, the environment and --set', () => {
    const dir = folder({
      'hearth.yaml': 'mqtt:\n  url: mqtt://broker.lan\n  password_file: run/mqtt_password\n',
      llm_key: 'sk-from-env-file\n',
    });
    mkdirSync(join(dir, 'run'));
    writeFileSync(join(dir, 'run', 'mqtt_password'), 'line one stays  \n');
    const { config } = load(dir, { HEARTH_AGENT_API_KEY_FILE: join(dir, 'llm_key') });
    assert.equal(config.mqtt.password, 'line one stays  ', 'relative to the config file; only the trailing newline goes');
    assert.equal(config.agent.apiKey, 'sk-from-env-file');
    assert.equal((config.mqtt as Record<string, unknown>).passwordFile, undefined, 'the config carries the value, not the path');
    assert.equal(load(dir, {}, { 'agent.api_key_file': 'llm_key' }).config.agent.apiKey, 'sk-from-env-file');
  });

  it('a missing *_file, or a secret given twice, names the setting and the path', () => {
    const dir = folder({ 'hearth.yaml': 'mqtt:\n  password_file: /nowhere/mqtt_password\n' });
    const err = errorOf(() => load(dir));
    assert.equal(err.source, join(dir, 'hearth.yaml'));
    assert.equal(err.field, 'mqtt.password_file');
    assert.match(err.problem, /^cannot read \/nowhere\/mqtt_password: ENOENT$/);
    const env = errorOf(() => load(folder({}), { HEARTH_MQTT_PASSWORD_FILE: '/nowhere/x' }));
    assert.equal(env.field, 'HEARTH_MQTT_PASSWORD_FILE');
    const both = folder({ 'hearth.yaml': 'agent:\n  api_key: a\n  api_key_file: b\n', b: 'x' });
    const twice = errorOf(() => load(both));
    assert.equal(twice.field, 'agent.api_key');
    assert.match(twice.problem, /set twice: give either it or agent\.api_key_file, not both/);
  });
});
