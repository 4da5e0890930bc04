// Behind a TLS reverse proxy the page's origin is https://home.example.org,
// not http://<host>: `http.trusted_origins` in hearth.yaml lets it in. A real
// `hearth start` (real HTTP server) with and without the setting, asked by a
// real HTTP client sending the browser's Origin header.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { freePort } from '../helpers/brokers.js';
import { spawnHearth, type Spawned } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-origins-'));
const running: Spawned[] = [];
after(async () => {
  for (const r of running) await r.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** `hearth start` with this `http:` section in its hearth.yaml; returns the HTTP base URL. */
async function start(name: string, httpYaml: string): Promise<string> {
  const [brokerPort, httpPort] = [await freePort(), await freePort()];
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, `http:\n  port: ${httpPort}\n${httpYaml}`);
  const hearth = spawnHearth(['start', '--config', file, '--broker-port', String(brokerPort), '--db', join(dir, `${name}.db`)], { cwd: dir });
  running.push(hearth);
  await hearth.waitForOutput('Press Ctrl+C to stop.', 20_000);
  return `http://127.0.0.1:${httpPort}`;
}

const from = (base: string, path: string, origin: string, init: RequestInit = {}) =>
  fetch(`${base}${path}`, { ...init, headers: { ...(init.headers as Record<string, string>), origin } });

describe('http.trusted_origins', () => {
  it('accepts a trusted origin, refuses others (API and MCP)', async () => {
    const base = await start('trusted', '  trusted_origins:\n    - https://home.example.org\n');
    const ok = await from(base, '/api/health', 'https://home.example.org');
    assert.equal(ok.status, 200);
    assert.deepEqual(await ok.json(), { ok: true });
    // Case does not matter in an origin's scheme and host.
    assert.equal((await from(base, '/api/health', 'HTTPS://Home.Example.org')).status, 200);

    const other = await from(base, '/api/health', 'https://evil.example.org');
    assert.equal(other.status, 403);
    const body = (await other.json()) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'forbidden_origin');
    assert.match(body.error.message, /origin "https:\/\/evil\.example\.org" are refused: .*http\.trusted_origins/);
    // The same origin on another port or scheme is another origin.
    assert.equal((await from(base, '/api/health', 'https://home.example.org:8443')).status, 403);
    assert.equal((await from(base, '/api/health', 'http://home.example.org')).status, 403);

    // MCP is behind the same check: a trusted page gets as far as the token check.
    const post = {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    };
    assert.equal((await from(base, '/mcp', 'https://home.example.org', post)).status, 401);
    assert.equal((await from(base, '/mcp', 'https://evil.example.org', post)).status, 403);
  });

  it('without the setting the proxied page is refused, as before', async () => {
    const base = await start('untrusted', '');
    const refused = await from(base, '/api/health', 'https://home.example.org');
    assert.equal(refused.status, 403);
    assert.equal(((await refused.json()) as { error: { code: string } }).error.code, 'forbidden_origin');
    assert.equal((await from(base, '/api/health', base)).status, 200, 'the page on http://<host> still is');
  });

  it('refuses a trusted origin with a path at start-up, naming the setting', async () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'http:\n  trusted_origins: [https://home.example.org/hearth]\n');
    const bad = spawnHearth(['start', '--config', file, '--broker-port', String(await freePort()), '--db', join(dir, 'bad.db')], { cwd: dir });
    running.push(bad);
    assert.equal(await bad.exited, 2);
    assert.match(bad.stderr(), /configuration error: .*bad\.yaml: http\.trusted_origins\[0\]: must match pattern/);
  });
});
