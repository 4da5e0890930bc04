// A daemon restart in the middle of an MCP sign-in (docs/mcp.md, "A restart mid-sign-in"), with the SDK's own
// OAuth client against a real `hearth start` on a real SQLite file, restarted between the steps: a restart while
// the owner is on the consent page loses nothing (the consent is checked again from the authorization request the
// page carries, and the registered client is in the database); a code issued before a restart is refused after it
// (codes live in memory, 60 s and single use): the app is told to sign in again and nothing is granted.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { freePort } from '../helpers/brokers.js';
import { runHearth, spawnHearth, type Spawned } from '../helpers/cli.js';
import { MemoryProvider, mcpInitialize } from '../helpers/oauth-client.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-oauth-restart-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('MCP sign-in across a daemon restart', () => {
  const db = join(dir, 'h.db');
  let brokerPort: number;
  let httpPort: number;
  let daemon: Spawned | undefined;
  let owner: string;
  // The app's redirect: never followed here (the code is read from the consent API's answer).
  const callback = 'http://127.0.0.1:9/callback';
  const base = () => `http://127.0.0.1:${httpPort}`;
  const mcpUrl = () => new URL(`${base()}/mcp`);

  async function start(): Promise<void> {
    daemon = spawnHearth(['start', '--broker-port', String(brokerPort), '--db', db, '--set', `http.port=${httpPort}`], { cwd: dir });
    await daemon.waitForOutput('Press Ctrl+C to stop.', 30_000);
  }
  async function restart(): Promise<void> {
    assert.equal(await daemon!.stop(), 0, daemon!.stderr());
    await start();
  }
  const decide = async (url: URL, principal: string) => {
    const r = await fetch(`${base()}/api/oauth/decision`, {
      method: 'POST',
      headers: { authorization: `Bearer ${owner}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: url.search, allow: true, principal, roles: ['owner'] }),
      signal: AbortSignal.timeout(15_000),
    });
    const text = await r.text();
    assert.equal(r.status, 200, text);
    const code = new URL((JSON.parse(text) as { redirect: string }).redirect).searchParams.get('code');
    assert.ok(code, text);
    return code;
  };
  const mcpStatus = async (token: string) => (await mcpInitialize(mcpUrl(), token)).status;
  const grants = async () => {
    const r = await runHearth(['token', 'list', '--json', '--db', db], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    return (JSON.parse(r.stdout) as Array<{ principal: string; revokedAt: string | null }>).filter((t) => t.principal.startsWith('mcp:'));
  };

  before(async () => {
    brokerPort = await freePort();
    httpPort = await freePort();
    await start();
    const made = await runHearth(['token', 'create', 'owner-laptop', '--role', 'owner', '--json', '--db', db], { cwd: dir });
    assert.equal(made.code, 0, made.stderr);
    owner = (JSON.parse(made.stdout) as { secret: string }).secret;
  });
  after(async () => {
    await daemon?.stop();
  });

  it('a restart while the owner is on the consent page loses nothing: the sign-in completes', async () => {
    const provider = new MemoryProvider(callback, 'Desk app');
    assert.equal(await auth(provider, { serverUrl: mcpUrl() }), 'REDIRECT');
    await restart();
    const code = await decide(provider.authorizationUrl!, 'mcp:desk-app');
    assert.equal(await auth(provider, { serverUrl: mcpUrl(), authorizationCode: code }), 'AUTHORIZED');
    assert.equal(await mcpStatus(provider.saved!.access_token), 200);
    assert.deepEqual(
      (await grants()).map((g) => [g.principal, g.revokedAt]),
      [['mcp:desk-app', null]],
    );
  });

  it('a code issued before a restart is refused after it: sign in again, nothing granted', async () => {
    const provider = new MemoryProvider(callback, 'Tablet app');
    assert.equal(await auth(provider, { serverUrl: mcpUrl() }), 'REDIRECT');
    const code = await decide(provider.authorizationUrl!, 'mcp:tablet-app');
    await restart();
    await assert.rejects(auth(provider, { serverUrl: mcpUrl(), authorizationCode: code }), /authorization code is unknown or expired; sign in again/);
    assert.equal(provider.saved, undefined);
    assert.deepEqual(
      (await grants()).map((g) => g.principal),
      ['mcp:desk-app'],
    );
    // Signing in again works at once.
    const again = new MemoryProvider(callback, 'Tablet app');
    assert.equal(await auth(again, { serverUrl: mcpUrl() }), 'REDIRECT');
    const fresh = await decide(again.authorizationUrl!, 'mcp:tablet-app');
    assert.equal(await auth(again, { serverUrl: mcpUrl(), authorizationCode: fresh }), 'AUTHORIZED');
    assert.equal(await mcpStatus(again.saved!.access_token), 200);
  });
});
