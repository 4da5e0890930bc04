import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/load.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-config-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function write(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
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

describe('config', () => {
  it('defaults to the embedded broker, port 1883, a hearth.db in the working directory', () => {
    const { config, file } = loadConfig({ cwd: dir, env: {} });
    assert.equal(file, undefined);
    assert.equal(config.mqtt.url, undefined);
    assert.equal(config.mqtt.embedded.port, 1883);
    assert.equal(config.mqtt.embedded.host, '127.0.0.1');
    assert.equal(config.database.path, join(dir, 'hearth.db'));
    assert.equal(config.tools.shape, 'auto');
  });

  it('reads hearth.yaml, then HEARTH_* env, then flags, each overriding the one before', () => {
    const sub = mkdtempSync(join(dir, 'layers-'));
    writeFileSync(join(sub, 'hearth.yaml'), 'mqtt:\n  url: mqtt://file:1883\n  keepalive: 10\ndatabase:\n  path: data/h.db\n');
    const fileOnly = loadConfig({ cwd: sub, env: {} });
    assert.equal(fileOnly.file, join(sub, 'hearth.yaml'));
    assert.equal(fileOnly.config.mqtt.url, 'mqtt://file:1883');
    assert.equal(fileOnly.config.database.path, join(sub, 'data/h.db'), 'paths in a file are relative to the file');

    const withEnv = loadConfig({ cwd: sub, env: { HEARTH_MQTT_URL: 'mqtt://env:1883', HEARTH_MQTT_KEEPALIVE: '20', HEARTH_TOOLS_GROUP_ABOVE: '7' } });
    assert.equal(withEnv.config.mqtt.url, 'mqtt://env:1883');
    assert.equal(withEnv.config.mqtt.keepalive, 20);
    assert.equal(withEnv.config.tools.groupAbove, 7);

    const withFlags = loadConfig({
      cwd: sub,
      env: { HEARTH_MQTT_URL: 'mqtt://env:1883' },
      flags: { 'mqtt.url': 'ws://flag:9001', 'devices.paths': ['a', 'b'] },
    });
    assert.equal(withFlags.config.mqtt.url, 'ws://flag:9001');
    assert.deepEqual(withFlags.config.devices.paths, [join(sub, 'a'), join(sub, 'b')]);
  });

  it("reads the offline model's sentence folder relative to the file, and refuses a bad language name", () => {
    const sub = mkdtempSync(join(dir, 'intent-'));
    writeFileSync(join(sub, 'hearth.yaml'), 'intent:\n  sentences: my-sentences\n');
    mkdirSync(join(sub, 'my-sentences'));
    const { config } = loadConfig({ cwd: dir, flags: {}, env: {}, file: join(sub, 'hearth.yaml') });
    assert.equal(config.intent.sentences, join(sub, 'my-sentences'));
    assert.equal(config.intent.language, 'en');
    const err = errorOf(() => loadConfig({ cwd: dir, env: { HEARTH_INTENT_LANGUAGE: '../etc' } }));
    assert.match(err.message, /HEARTH_INTENT_LANGUAGE: must match pattern/);
  });

  it('names the file and field of a wrong value', () => {
    const file = write('bad-port.yaml', 'mqtt:\n  embedded:\n    port: seventeen\n');
    const err = errorOf(() => loadConfig({ cwd: dir, file, env: {} }));
    assert.equal(err.source, file);
    assert.equal(err.field, 'mqtt.embedded.port');
    assert.match(err.problem, /must be integer/);
    assert.match(err.message, /bad-port\.yaml: mqtt\.embedded\.port: must be integer \(got "seventeen"\)/);
  });

  it('names an unknown field and a bad enum value', () => {
    const unknown = write('unknown.yaml', 'mqtt:\n  urll: mqtt://x\n');
    assert.equal(errorOf(() => loadConfig({ cwd: dir, file: unknown, env: {} })).field, 'mqtt.urll');
    const shape = write('shape.yaml', 'tools:\n  shape: clustered\n');
    const err = errorOf(() => loadConfig({ cwd: dir, file: shape, env: {} }));
    assert.equal(err.field, 'tools.shape');
    assert.match(err.problem, /must be one of "auto", "per-entity", "grouped"/);
  });

  it('names the line of a YAML syntax error', () => {
    const file = write('syntax.yaml', 'mqtt:\n  url: [unclosed\n');
    const err = errorOf(() => loadConfig({ cwd: dir, file, env: {} }));
    assert.equal(err.source, file);
    assert.match(err.field, /^line \d+$/);
    assert.match(err.problem, /not valid YAML/);
  });

  it('names the environment variable of a wrong value', () => {
    const err = errorOf(() => loadConfig({ cwd: dir, env: { HEARTH_MQTT_EMBEDDED_PORT: '99999' } }));
    assert.equal(err.source, 'environment');
    assert.equal(err.field, 'HEARTH_MQTT_EMBEDDED_PORT');
    assert.match(err.problem, /must be <= 65535/);
    const url = errorOf(() => loadConfig({ cwd: dir, env: { HEARTH_MQTT_URL: 'http://broker' } }));
    assert.equal(url.field, 'HEARTH_MQTT_URL');
    const durability = errorOf(() => loadConfig({ cwd: dir, env: { HEARTH_AUDIT_DURABILITY: 'sometimes' } }));
    assert.equal(durability.field, 'HEARTH_AUDIT_DURABILITY');
    assert.match(durability.problem, /must be one of "full", "grouped"/);
  });

  it('keeps every audit commit synchronous unless grouped is asked for', () => {
    assert.equal(loadConfig({ cwd: dir, env: {} }).config.audit.durability, 'full');
    assert.equal(loadConfig({ cwd: dir, env: { HEARTH_AUDIT_DURABILITY: 'grouped' } }).config.audit.durability, 'grouped');
  });

  it('refuses an unknown flag setting and a missing explicit file', () => {
    assert.equal(errorOf(() => loadConfig({ cwd: dir, env: {}, flags: { 'mqtt.nope': 'x' } })).field, 'mqtt.nope');
    const missing = errorOf(() => loadConfig({ cwd: dir, env: {}, file: 'nowhere.yaml' }));
    assert.match(missing.message, /nowhere\.yaml: \(file\): does not exist/);
  });
});
