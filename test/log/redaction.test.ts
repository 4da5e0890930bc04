// Secrets never reach the log: a real run of `hearth start` with a broker password (in the URL and in the
// settings) and a provider API key, at debug level, first with the right password and then a wrong one, and
// the lines a config or request headers object would make. The run's whole log is searched for each secret.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { spawnHearth } from '../helpers/cli.js';
import { logSink } from '../helpers/log-sink.js';
import { startMultiListenerMosquitto, type MultiListenerMosquitto } from '../helpers/mosquitto-config.js';

const API_KEY = 'sk-hearth-test-4p1-k3y';
const WRONG = 'n0t-the-r1ght-one';

describe('log redaction', () => {
  let broker: MultiListenerMosquitto;
  let dir: string;
  before(async () => {
    broker = await startMultiListenerMosquitto();
    dir = mkdtempSync(join(tmpdir(), 'hearth-redact-'));
  });
  after(async () => {
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const run = async (password: string, waitFor: RegExp) => {
    const port = broker.ports.mqtt;
    writeFileSync(
      join(dir, 'hearth.yaml'),
      [
        'mqtt:',
        `  url: mqtt://${broker.username}:${password}@127.0.0.1:${port}`,
        `  username: ${broker.username}`,
        `  password: ${password}`,
        'agent:',
        '  provider: openai',
        '  baseUrl: http://127.0.0.1:9/v1',
        '  model: m',
        `  apiKey: ${API_KEY}`,
        'http:',
        '  port: 0',
        '',
      ].join('\n'),
    );
    const p = spawnHearth(['start', '--no-simulator', '--db', join(dir, 'h.db'), '--log-level', 'debug'], { cwd: dir });
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ${waitFor} in the log:\n${p.stderr()}`)), 60_000);
        const check = () => {
          if (waitFor.test(p.stderr())) {
            clearTimeout(timer);
            resolve();
          }
        };
        p.child.stderr!.on('data', check);
        void p.exited.then((code) => reject(new Error(`hearth exited (${code}) before ${waitFor}:\n${p.stderr()}`)));
        check();
      });
    } finally {
      await p.stop();
    }
    return p.stderr() + p.stdout();
  };

  it('a run with the right password logs neither the password nor the API key', async () => {
    const log = await run(broker.password, /MQTT connected/);
    assert.match(log, /\*\*\*@127\.0\.0\.1/, 'the URL is logged, without its credentials');
    assert.ok(!log.includes(broker.password), 'the broker password is in the log');
    assert.ok(!log.includes(API_KEY), 'the API key is in the log');
  });

  it('a refused password is logged as refused, without the password', async () => {
    const log = await run(WRONG, /MQTT error/);
    assert.match(log, /Not authorized|Bad username or password/i);
    assert.ok(!log.includes(WRONG), 'the wrong password is in the log');
    assert.ok(!log.includes(API_KEY), 'the API key is in the log');
  });

  it('config, options and header objects lose their secrets whoever logs them', () => {
    const { log, lines } = logSink('debug');
    log.info({ config: { mqtt: { url: 'mqtt://u:pw-in-url@h:1883', password: 'pw-field' }, agent: { apiKey: API_KEY } } }, 'config');
    log.info({ headers: { authorization: 'Bearer tok-secret-1', cookie: 'hearth_session=tok-secret-2' } }, 'request');
    log.info({ secret: 'tok-secret-3', url: 'mqtts://a:pw-in-url-2@h' }, 'token');
    const text = JSON.stringify(lines);
    for (const secret of ['pw-in-url', 'pw-field', API_KEY, 'tok-secret-1', 'tok-secret-2', 'tok-secret-3', 'pw-in-url-2']) {
      assert.ok(!text.includes(secret), `${secret} is in the log`);
    }
    assert.equal((lines[0]!.config as { mqtt: { url: string } }).mqtt.url, 'mqtt://***@h:1883', 'the URL itself is kept');
  });
});
