// MCP sign-in by OAuth, end to end: the MCP SDK's own OAuth client (`auth()`
// with an OAuthClientProvider, and the Streamable HTTP transport with an
// authProvider) against Hearth's real HTTP server on the demo home (real
// broker, SQLite file), the consent page in headless Chromium, the CLI's
// token list and revoke; and every way in that must stay shut.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { chromium, type Browser } from 'playwright-core';
import { isPublicAddress } from '../../src/http/oauth/client-document.js';
import { runHearth } from '../helpers/cli.js';
import { useHttpHome } from '../helpers/http-home.js';
import { MemoryProvider, mcpInitialize } from '../helpers/oauth-client.js';
import { CHROMIUM_ARGS, DESKTOP, findChromium, openSignedIn } from '../helpers/page-browser.js';
import { waitFor } from '../helpers/wait.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-oauth-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('MCP sign-in by OAuth', () => {
  const home = useHttpHome({
    mcp: true,
    tokens: {
      owner: { name: 'owner-phone', principal: 'http:owner', roles: ['owner'] },
      guest: { name: 'guest-tablet', principal: 'http:guest', roles: ['guest'] },
    },
  });
  let callback: Server;
  let callbackUrl: string;
  const arrived: URLSearchParams[] = [];
  let browser: Browser;

  before(async () => {
    // The app's own redirect listener (a desktop client's loopback page): it records what it is sent back.
    callback = createServer((req, res) => {
      arrived.push(new URL(req.url ?? '/', 'http://x').searchParams);
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<p>You can close this window.</p>');
    });
    await new Promise<void>((resolve) => callback.listen(0, '127.0.0.1', resolve));
    callbackUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;
    home.cleanup(() => new Promise((r) => callback.close(r)));
    // A role in use in this home: family may switch the kitchen light.
    home.hearth.policy.setRoles('chat:alice', ['family']);
    home.hearth.policy.add({ subject: 'role:family', targetType: 'entity', target: 'kitchen_light.light', action: 'actuate', effect: 'allow', priority: 10 });
    browser = await chromium.launch({ executablePath: findChromium(), args: CHROMIUM_ARGS, timeout: 30_000 });
    home.cleanup(() => browser.close());
  });

  const base = () => home.server.url;
  const mcpUrl = () => new URL(`${base()}/mcp`);
  const owner = () => home.secret('owner');

  /** A request with headers fetch will not send (Host, X-Forwarded-*). */
  function raw(path: string, headers: Record<string, string>, method = 'GET'): Promise<{ status: number; headers: Record<string, unknown>; json: any }> {
    return new Promise((resolve, reject) => {
      const req = httpRequest(`${base()}${path}`, { method, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          let json: any;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, json });
        });
      });
      req.on('error', reject);
      req.end();
    });
  }

  /** Start a sign-in with the SDK: it discovers, registers (RFC 7591) and hands back the authorization URL. */
  async function start(provider: MemoryProvider): Promise<URL> {
    assert.equal(await auth(provider, { serverUrl: mcpUrl() }), 'REDIRECT');
    assert.ok(provider.authorizationUrl);
    return provider.authorizationUrl;
  }

  /** The owner's answer through the API the consent page uses. */
  const decide = (url: URL, body: Record<string, unknown>, token = owner()) =>
    home.api('POST', '/api/oauth/decision', { token, body: { query: url.search, ...body } });

  /** A whole sign-in without the browser: the SDK's flow, the owner allowing `roles` for `principal`. */
  async function signIn(name: string, roles = ['family'], principal = `mcp:${name.toLowerCase().replace(/ /g, '-')}`) {
    const provider = new MemoryProvider(callbackUrl, name);
    const url = await start(provider);
    const answer = await decide(url, { allow: true, principal, roles });
    assert.equal(answer.status, 200, answer.text);
    const code = new URL(answer.json.redirect).searchParams.get('code');
    assert.ok(code);
    assert.equal(await auth(provider, { serverUrl: mcpUrl(), authorizationCode: code }), 'AUTHORIZED');
    return { provider, code, url, tokens: provider.saved! };
  }

  const mcpWith = (token: string) => mcpInitialize(mcpUrl(), token);

  const tokenRequest = (form: Record<string, string>) =>
    fetch(`${base()}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
      signal: AbortSignal.timeout(15_000),
    });

  it('a 401 from /mcp says where to sign in; the metadata documents say the rest', async () => {
    const res = await mcpWith('');
    assert.equal(res.status, 401);
    const challenge = res.headers.get('www-authenticate') ?? '';
    assert.match(challenge, new RegExp(`^Bearer .*resource_metadata="${base()}/\\.well-known/oauth-protected-resource/mcp"`));
    const resource = await home.api('GET', '/.well-known/oauth-protected-resource/mcp');
    assert.equal(resource.status, 200);
    assert.deepEqual([resource.json.resource, resource.json.authorization_servers], [`${base()}/mcp`, [base()]]);
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      const server = await home.api('GET', path);
      assert.equal(server.status, 200, path);
      assert.equal(server.json.issuer, base());
      assert.deepEqual(server.json.code_challenge_methods_supported, ['S256']);
      assert.equal(server.json.client_id_metadata_document_supported, true);
      assert.equal(server.json.token_endpoint, `${base()}/oauth/token`);
    }
    // A client in a browser tab (the Inspector) may read them from its own origin.
    const cors = await home.api('GET', '/.well-known/oauth-authorization-server', { headers: { origin: 'http://localhost:6274' } });
    assert.equal(cors.status, 200);
    assert.equal(cors.headers.get('access-control-allow-origin'), '*');
  });

  it('the SDK signs in through the consent page in Chromium; the client acts as its own principal, audited, listed by the CLI', async () => {
    const provider = new MemoryProvider(callbackUrl, 'Claude <b>Test</b>');
    const transport = new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider });
    const first = new Client({ name: 'oauth-test', version: '1.0.0' });
    await assert.rejects(first.connect(transport), /Unauthorized/);
    const url = provider.authorizationUrl;
    assert.ok(url, 'the SDK was sent to the authorization page');
    assert.equal(url.origin + url.pathname, `${base()}/oauth/authorize`);
    assert.equal(url.searchParams.get('code_challenge_method'), 'S256');
    assert.equal(url.searchParams.get('resource'), `${base()}/mcp`);

    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(err.message));
    page.on('request', (req) => {
      if (!req.url().startsWith(base()) && !req.url().startsWith(callbackUrl)) problems.push(`outside request ${req.url()}`);
    });
    try {
      // The app sends the browser from its own site (another origin), as the Inspector's page does.
      await page.goto(callbackUrl);
      await page.evaluate((href) => {
        location.href = href;
      }, url.href);
      await page.fill('#token', owner());
      await page.click('#login-form button[type=submit]');
      await page.locator('#consent-form').waitFor();
      // The app's name is shown as text, never as markup.
      assert.equal(await page.textContent('#client-name'), 'Claude <b>Test</b>');
      assert.equal(await page.locator('#client-name b').count(), 0);
      assert.equal(await page.textContent('#redirect-uri'), callbackUrl);
      assert.equal(await page.inputValue('#principal'), 'mcp:claude-b-test-b');
      await page.fill('#principal', 'mcp:claude-test');
      await page.check('#roles input[value=family]');
      const before = arrived.length;
      await page.click('#allow');
      await waitFor('the app gets its code', () => arrived.length > before, 15_000);
      const back = arrived.at(-1)!;
      assert.equal(back.get('state'), 'state-123');
      assert.equal(back.get('iss'), base());
      await transport.finishAuth(back.get('code')!);
    } finally {
      await page.close();
    }
    assert.deepEqual(problems, []);
    assert.match(provider.saved?.access_token ?? '', /^hearth_mcp_at_/);
    assert.ok(provider.saved?.refresh_token);

    const client = new Client({ name: 'oauth-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider }));
    home.cleanup(() => client.close().catch(() => undefined));
    const result = (await client.callTool({ name: 'kitchen_light', arguments: { action: 'turn_on' } })) as CallToolResult;
    assert.ok(!result.isError, JSON.stringify(result.content));
    const row = home.hearth.audit.tail(1)[0];
    assert.deepEqual([row.principal, row.tool, row.outcome], ['mcp:claude-test', 'kitchen_light', 'confirmed']);
    assert.deepEqual(home.hearth.policy.rolesOf('mcp:claude-test'), ['family']);
    // Family may not unlock the front door: the client has no more than it was given.
    const lock = (await client.callTool({ name: 'front_door_lock', arguments: { action: 'unlock' } })) as CallToolResult;
    assert.equal(lock.isError, true);

    const list = await runHearth(['token', 'list', '--db', join(home.dir, 'hearth.db')], { cwd: dir });
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /oauth\.claude-b-test-b\.[0-9a-f]{6} +mcp:claude-test +family .* active/);
    assert.ok(!list.stdout.includes(provider.saved!.access_token), 'no secret is listed');
  });

  it('a refused consent sends the app back with access_denied and no code; nothing is granted', async () => {
    const provider = new MemoryProvider(callbackUrl, 'Refused app');
    const url = await start(provider);
    const answer = await decide(url, { allow: false });
    assert.equal(answer.status, 200, answer.text);
    const back = new URL(answer.json.redirect);
    assert.equal(back.origin + back.pathname, callbackUrl);
    assert.deepEqual([back.searchParams.get('error'), back.searchParams.get('state'), back.searchParams.get('code')], ['access_denied', 'state-123', null]);
    assert.ok(!home.hearth.tokens.list().some((t) => t.name.startsWith('oauth.refused-app')));
  });

  it('a forged redirect_uri is refused on the page and nothing is sent to it', async () => {
    const provider = new MemoryProvider(callbackUrl, 'Forged app');
    const url = await start(provider);
    url.searchParams.set('redirect_uri', 'https://attacker.example/steal');
    for (const path of ['/api/oauth/authorize', '/api/oauth/decision']) {
      const answer = await home.api('POST', path, {
        token: owner(),
        body: { query: url.search, ...(path.endsWith('decision') ? { allow: true, principal: 'mcp:forged', roles: ['family'] } : {}) },
      });
      assert.equal(answer.status, 400, answer.text);
      assert.match(answer.json.error.message, /redirect_uri: "https:\/\/attacker\.example\/steal" is not one this client registered/);
      assert.equal(answer.json.error.redirect, undefined, 'no redirect to the forged address');
    }
    // A client cannot register a script or a plain-HTTP address off this machine either.
    for (const bad of ['javascript:alert(1)', 'http://attacker.example/cb']) {
      const reg = await home.api('POST', '/oauth/register', { body: { client_name: 'x', redirect_uris: [bad] } });
      assert.equal(reg.status, 400, bad);
      assert.equal(reg.json.error, 'invalid_redirect_uri');
    }
  });

  it('a code works once: replayed, it is refused and the tokens it gave are revoked', async () => {
    const { provider, code, tokens } = await signIn('Replay app');
    assert.equal((await mcpWith(tokens.access_token)).status, 200);
    const again = await tokenRequest({
      grant_type: 'authorization_code',
      code,
      client_id: provider.info!.client_id,
      redirect_uri: callbackUrl,
      code_verifier: provider.verifier!,
    });
    assert.equal(again.status, 400);
    assert.equal(((await again.json()) as { error: string }).error, 'invalid_grant');
    const refused = await mcpWith(tokens.access_token);
    assert.equal(refused.status, 401);
    assert.match(refused.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
  });

  it('a wrong code_verifier gets no token', async () => {
    const provider = new MemoryProvider(callbackUrl, 'Verifier app');
    const url = await start(provider);
    const answer = await decide(url, { allow: true, principal: 'mcp:verifier-app', roles: ['family'] });
    const code = new URL(answer.json.redirect).searchParams.get('code')!;
    const wrong = await tokenRequest({
      grant_type: 'authorization_code',
      code,
      client_id: provider.info!.client_id,
      redirect_uri: callbackUrl,
      code_verifier: 'x'.repeat(64),
    });
    assert.equal(wrong.status, 400);
    const body = (await wrong.json()) as { error: string; error_description: string };
    assert.deepEqual([body.error, body.error_description], ['invalid_grant', 'code_verifier does not match the code_challenge']);
  });

  it('a token is good for this /mcp only: another resource is refused at sign-in and at the door, and /api refuses it', async () => {
    const provider = new MemoryProvider(callbackUrl, 'Resource app');
    const url = await start(provider);
    url.searchParams.set('resource', 'https://other.example/mcp');
    const asked = await decide(url, { allow: true, principal: 'mcp:resource-app', roles: ['family'] });
    assert.equal(asked.status, 400);
    assert.equal(new URL(asked.json.error.redirect).searchParams.get('error'), 'invalid_target');

    const { tokens, provider: signedIn } = await signIn('Audience app');
    const refreshForOther = await tokenRequest({
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token!,
      client_id: signedIn.info!.client_id,
      resource: 'https://other.example/mcp',
    });
    assert.equal(refreshForOther.status, 400);
    assert.equal(((await refreshForOther.json()) as { error: string }).error, 'invalid_target');
    // The same server under another name is another resource: the token was bound to http://127.0.0.1:<port>/mcp.
    const port = new URL(base()).port;
    const elsewhere = await raw('/mcp', { host: `localhost:${port}`, authorization: `Bearer ${tokens.access_token}` }, 'POST');
    assert.equal(elsewhere.status, 401);
    assert.match(String(elsewhere.headers['www-authenticate']), /is for http:\/\/127\.0\.0\.1:\d+\/mcp, not http:\/\/localhost:\d+\/mcp/);
    const api = await home.api('GET', '/api/devices', { token: tokens.access_token });
    assert.equal(api.status, 401);
  });

  it('an expired access token is refused; the SDK refreshes (both tokens rotate) and a reused refresh token revokes the grant', async () => {
    const { provider, tokens } = await signIn('Expiry app');
    home.hearth.db.prepare('UPDATE oauth_grants SET access_expires_at = 0 WHERE access_hash IS NOT NULL AND client_name = ?').run('Expiry app');
    const expired = await mcpWith(tokens.access_token);
    assert.equal(expired.status, 401);
    assert.match(expired.headers.get('www-authenticate') ?? '', /error="invalid_token", error_description="the access token expired/);

    // The SDK's transport meets the 401, refreshes and goes on.
    const client = new Client({ name: 'expiry', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider }));
    home.cleanup(() => client.close().catch(() => undefined));
    assert.ok((await client.listTools()).tools.length > 0);
    assert.notEqual(provider.saved!.refresh_token, tokens.refresh_token, 'the refresh token rotated');

    const reused = await tokenRequest({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: provider.info!.client_id });
    assert.equal(reused.status, 400);
    assert.match(((await reused.json()) as { error_description: string }).error_description, /already used once; its grant is revoked/);
    assert.equal((await mcpWith(provider.saved!.access_token)).status, 401, 'the rotated tokens went with the grant');
  });

  it('`hearth token revoke` ends a sign-in: its access token, its refresh token, and the connected client is refused from then on', async () => {
    const { provider, tokens } = await signIn('Revoked app');
    const client = new Client({ name: 'revoked', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider }));
    home.cleanup(() => client.close().catch(() => undefined));
    const name = home.hearth.tokens.list().find((t) => t.name.startsWith('oauth.revoked-app.'))!.name;
    const revoked = await runHearth(['token', 'revoke', name, '--db', join(home.dir, 'hearth.db')], { cwd: dir });
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.equal((await mcpWith(tokens.access_token)).status, 401);
    const refresh = await tokenRequest({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: provider.info!.client_id });
    assert.equal(refresh.status, 400);
    assert.match(((await refresh.json()) as { error_description: string }).error_description, /revoked/);
    // The connected client's next request is refused, and the SDK cannot refresh its way back in.
    await assert.rejects(client.listTools());

    // An owner revokes on the page (Policy, Apps signed in), through the API.
    const other = await signIn('Page revoked app');
    const grants = await home.api('GET', '/api/oauth/grants', { token: owner() });
    const grant = grants.json.grants.find((g: { clientName: string }) => g.clientName === 'Page revoked app');
    assert.deepEqual([grant.principal, grant.roles, grant.grantedBy], ['mcp:page-revoked-app', ['family'], 'http:owner']);
    const { context, page, problems } = await openSignedIn(base(), owner(), {
      profileDir: join(dir, 'profile'),
      viewport: DESKTOP,
      name: 'apps',
      hash: '#policy',
    });
    try {
      const row = page.locator(`#apps-list tr[data-grant="${grant.tokenName}"]`);
      await row.waitFor();
      assert.match((await row.textContent()) ?? '', /Page revoked app.*mcp:page-revoked-app.*family/);
      page.once('dialog', (d) => void d.accept());
      await row.getByRole('button', { name: 'Revoke Page revoked app' }).click();
      await row.getByText(/^revoked /).waitFor();
    } finally {
      await context.close();
    }
    assert.deepEqual(problems, []);
    assert.equal((await mcpWith(other.tokens.access_token)).status, 401);
    const again = await home.api('POST', `/api/oauth/grants/${grant.tokenName}/revoke`, { token: owner() });
    assert.equal(again.status, 409);
    assert.equal((await home.api('GET', '/api/oauth/grants', { token: home.secret('guest') })).status, 403);
  });

  it('a guest cannot consent, on the page or through the API', async () => {
    const provider = new MemoryProvider(callbackUrl, 'Guest app');
    const url = await start(provider);
    const answer = await decide(url, { allow: true, principal: 'mcp:guest-app', roles: ['guest'] }, home.secret('guest'));
    assert.equal(answer.status, 403);
    assert.match(answer.json.error.message, /only an owner may let an app act in this home; http:guest is not one/);
    const page = await browser.newPage();
    try {
      await page.goto(url.href);
      await page.fill('#token', home.secret('guest'));
      await page.click('#login-form button[type=submit]');
      await page.locator('#done-text', { hasText: 'only an owner may' }).waitFor();
      assert.equal(await page.locator('#consent-form').isVisible(), false);
    } finally {
      await page.close();
    }
  });

  it('a client asking for more than the owner can give gets what the owner ticks, never the rest', async () => {
    const provider = new MemoryProvider(callbackUrl, 'Greedy app', 'owner superuser family');
    const url = await start(provider);
    const shown = await home.api('POST', '/api/oauth/authorize', { token: owner(), body: { query: url.search } });
    assert.equal(shown.status, 200, shown.text);
    assert.deepEqual(shown.json.asked, ['owner', 'superuser', 'family']);
    assert.ok(!shown.json.grantable.includes('superuser'));
    const beyond = await decide(url, { allow: true, principal: 'mcp:greedy-app', roles: ['family', 'superuser'] });
    assert.equal(beyond.status, 403);
    assert.match(beyond.json.error.message, /roles: superuser is not yours to give/);
    assert.deepEqual(home.hearth.policy.rolesOf('mcp:greedy-app'), []);
    // Acting as a principal of another door (an owner's own) is refused: an app acts as an mcp: principal.
    const other = await decide(url, { allow: true, principal: 'http:owner', roles: ['family'] });
    assert.equal(other.status, 400);
    assert.match(other.json.error.message, /principal: "http:owner": an app acts as an mcp: principal/);
  });

  it('OAuth is refused over plain HTTP off loopback, and a forwarded https origin must be one the owner trusts', async () => {
    const lan = await raw('/.well-known/oauth-protected-resource/mcp', { host: 'hearth.lan:8080' });
    assert.equal(lan.status, 403);
    assert.match(lan.json.error_description, /OAuth sign-in needs HTTPS off this machine/);
    const noMetadata = await raw('/mcp', { host: 'hearth.lan:8080' }, 'POST');
    assert.equal(noMetadata.status, 401);
    assert.equal(noMetadata.headers['www-authenticate'], 'Bearer realm="hearth"');
    const forged = await raw('/.well-known/oauth-authorization-server', { host: 'evil.example', 'x-forwarded-proto': 'https' });
    assert.equal(forged.status, 403);
    assert.match(forged.json.error_description, /https:\/\/evil\.example, which is not listed in http\.trusted_origins/);
  });

  it("a client's metadata document is fetched only from public addresses", async () => {
    const provider = new MemoryProvider(callbackUrl, 'Document app');
    const url = await start(provider);
    url.searchParams.set('client_id', 'https://127.0.0.1:9/client.json');
    const answer = await home.api('POST', '/api/oauth/authorize', { token: owner(), body: { query: url.search } });
    assert.equal(answer.status, 400);
    assert.match(answer.json.error.message, /resolves to 127\.0\.0\.1, not a public address/);
    for (const address of [
      '10.1.2.3',
      '192.168.1.1',
      '172.20.0.1',
      '169.254.169.254',
      '100.64.0.1',
      '::1',
      'fd00::1',
      'fe80::1',
      '::ffff:192.168.1.1',
      '0.0.0.0',
    ])
      assert.equal(isPublicAddress(address), false, address);
    for (const address of ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946']) assert.equal(isPublicAddress(address), true, address);
  });

  it('bad input to the token and registration endpoints gets an OAuth error naming what is wrong', async () => {
    const { provider } = await signIn('Bad input app');
    const clientId = provider.info!.client_id;
    const cases: Array<[string, RequestInit, number, string, RegExp]> = [
      [
        '/oauth/token',
        { body: '{"grant_type":"refresh_token"}', headers: { 'content-type': 'application/json' } },
        400,
        'invalid_request',
        /x-www-form-urlencoded/,
      ],
      ['/oauth/token', { body: new URLSearchParams({ grant_type: 'password', client_id: clientId }).toString() }, 400, 'unsupported_grant_type', /"password"/],
      [
        '/oauth/token',
        { body: new URLSearchParams({ grant_type: 'authorization_code', client_id: clientId }).toString() },
        400,
        'invalid_request',
        /code is required/,
      ],
      [
        '/oauth/token',
        { body: `grant_type=refresh_token&client_id=${clientId}&refresh_token=a&refresh_token=b` },
        400,
        'invalid_request',
        /refresh_token is given 2 times/,
      ],
      [
        '/oauth/token',
        { body: new URLSearchParams({ grant_type: 'refresh_token', client_id: 'nobody', refresh_token: 'x' }).toString() },
        401,
        'invalid_client',
        /no client "nobody"/,
      ],
      [
        '/oauth/token',
        { body: `grant_type=refresh_token&client_id=${clientId}&refresh_token=${'x'.repeat(20_000)}` },
        413,
        'invalid_request',
        /larger than 16384 bytes/,
      ],
      ['/oauth/register', { body: '{not json', headers: { 'content-type': 'application/json' } }, 400, 'invalid_client_metadata', /not JSON/],
      ['/oauth/register', { body: '[]', headers: { 'content-type': 'application/json' } }, 400, 'invalid_client_metadata', /must be a JSON object/],
      [
        '/oauth/register',
        { body: JSON.stringify({ redirect_uris: [callbackUrl], grant_types: ['client_credentials'] }), headers: { 'content-type': 'application/json' } },
        400,
        'invalid_client_metadata',
        /grant_types may hold only authorization_code, refresh_token/,
      ],
      [
        '/oauth/register',
        { body: JSON.stringify({ client_name: 'x' }), headers: { 'content-type': 'application/json' } },
        400,
        'invalid_redirect_uri',
        /non-empty list/,
      ],
    ];
    for (const [path, init, status, error, description] of cases) {
      const res = await fetch(`${base()}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(init.headers as Record<string, string>) },
        body: init.body,
        signal: AbortSignal.timeout(15_000),
      });
      const body = (await res.json()) as { error: string; error_description: string };
      assert.equal(res.status, status, `${path} ${String(init.body).slice(0, 60)}: ${body.error_description}`);
      assert.equal(body.error, error, body.error_description);
      assert.match(body.error_description, description);
    }
    assert.equal((await fetch(`${base()}/oauth/token`, { signal: AbortSignal.timeout(15_000) })).status, 405);
  });

  it('registration is open to anyone, so a flood of it is turned away with 429s', async () => {
    let refused: Response | undefined;
    for (let i = 0; i < 31 && !refused; i++) {
      const res = await fetch(`${base()}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: `flood ${i}`, redirect_uris: [callbackUrl] }),
        signal: AbortSignal.timeout(15_000),
      });
      if (res.status === 429) refused = res;
      else assert.equal(res.status, 201);
    }
    assert.ok(refused, 'the 31st registration within a minute is refused');
    assert.equal(((await refused.json()) as { error: string }).error, 'temporarily_unavailable');
  });

  it('pasted bearer tokens keep working on /mcp', async () => {
    const client = await home.mcpClient(owner());
    assert.ok((await client.listTools()).tools.length > 0);
  });
});
