// An MCP client known by its Client ID Metadata Document, signing in to a
// real `hearth start` with the MCP SDK's own OAuth client: Hearth fetches the
// document over HTTPS (a local server whose certificate the daemon is told to
// trust, on a host the owner listed in http.oauth_document_hosts), takes the
// app's name and redirect address from it, and issues tokens to that
// client_id. The same document on a host not listed is refused: it resolves to
// this machine.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpsServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { auth, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { runHearth } from '../helpers/cli.js';
import { useHearthStart } from '../helpers/use-hearth-start.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-cimd-'));
after(() => rmSync(dir, { recursive: true, force: true }));
// A certificate for localhost that only the daemon trusts (NODE_EXTRA_CA_CERTS), made here.
execFileSync(
  'openssl',
  [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=localhost',
    '-addext',
    'subjectAltName=DNS:localhost',
    '-keyout',
    'key.pem',
    '-out',
    'cert.pem',
  ],
  { env: { ...process.env, OPENSSL_CONF: '/dev/null' }, stdio: ['ignore', 'ignore', 'ignore'], cwd: dir },
);

describe('MCP sign-in with a client metadata document', () => {
  let documents: Server;
  let documentUrl = '';
  const redirect = 'http://127.0.0.1:1/callback';
  const hearth = useHearthStart(dir, ['--set', 'http.oauth_document_hosts=localhost'], { NODE_EXTRA_CA_CERTS: join(dir, 'cert.pem') });

  before(async () => {
    documents = createHttpsServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, (req, res) => {
      const body = JSON.stringify({
        client_id: documentUrl,
        client_name: 'Document App',
        redirect_uris: [redirect],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      });
      res.writeHead(req.url === '/client.json' ? 200 : 404, { 'content-type': 'application/json' });
      res.end(body);
    });
    await new Promise<void>((resolve) => documents.listen(0, '127.0.0.1', resolve));
    documentUrl = `https://localhost:${(documents.address() as AddressInfo).port}/client.json`;
  });
  after(() => new Promise((r) => documents.close(r)));

  it('the SDK signs in with its document URL as client_id, and the owner sees the name the document gives', async () => {
    const base = `http://127.0.0.1:${hearth.httpPort}`;
    const made = await runHearth(['token', 'create', 'owner-laptop', '--role', 'owner', '--db', hearth.db], { cwd: dir });
    const ownerToken = /hearth_\S+/.exec(made.stdout)?.[0];
    assert.ok(ownerToken, made.stdout + made.stderr);
    let tokens: OAuthTokens | undefined;
    let info: OAuthClientInformationMixed | undefined;
    let verifier = '';
    let authorizationUrl: URL | undefined;
    const provider: OAuthClientProvider = {
      get redirectUrl() {
        return redirect;
      },
      get clientMetadataUrl() {
        return documentUrl;
      },
      get clientMetadata(): OAuthClientMetadata {
        return { client_name: 'Document App', redirect_uris: [redirect] };
      },
      clientInformation: () => info,
      saveClientInformation: (i) => {
        info = i;
      },
      tokens: () => tokens,
      saveTokens: (t) => {
        tokens = t;
      },
      redirectToAuthorization: (url) => {
        authorizationUrl = url;
      },
      saveCodeVerifier: (v) => {
        verifier = v;
      },
      codeVerifier: () => verifier,
    };
    const serverUrl = new URL(`${base}/mcp`);
    assert.equal(await auth(provider, { serverUrl }), 'REDIRECT');
    assert.equal(info?.client_id, documentUrl, 'no registration: the document URL is the client id');
    assert.equal(authorizationUrl?.searchParams.get('client_id'), documentUrl);

    const post = (path: string, body: unknown) =>
      fetch(`${base}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ownerToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(15_000),
      }).then(async (r) => ({ status: r.status, json: (await r.json()) as any }));
    const shown = await post('/api/oauth/authorize', { query: authorizationUrl!.search });
    assert.equal(shown.status, 200, JSON.stringify(shown.json));
    assert.deepEqual([shown.json.client.name, shown.json.client.redirectUri, shown.json.client.source], ['Document App', redirect, 'metadata_document']);
    const decided = await post('/api/oauth/decision', { query: authorizationUrl!.search, allow: true, principal: 'mcp:document-app', roles: ['owner'] });
    assert.equal(decided.status, 200, JSON.stringify(decided.json));
    const code = new URL(decided.json.redirect).searchParams.get('code')!;
    assert.equal(await auth(provider, { serverUrl, authorizationCode: code }), 'AUTHORIZED');

    const client = new Client({ name: 'document-app', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(serverUrl, { authProvider: provider }));
    try {
      assert.ok((await client.listTools()).tools.some((t) => t.name === 'get_state'));
    } finally {
      await client.close();
    }
    const list = await runHearth(['token', 'list', '--db', hearth.db], { cwd: dir });
    assert.match(list.stdout, /oauth\.document-app\.[0-9a-f]{6} +mcp:document-app +owner /);
  });

  it('the same document under a name the owner did not list is refused: it resolves to this machine', async () => {
    const base = `http://127.0.0.1:${hearth.httpPort}`;
    const made = await runHearth(['token', 'create', 'owner-phone', '--role', 'owner', '--db', hearth.db], { cwd: dir });
    const ownerToken = /hearth_\S+/.exec(made.stdout)?.[0];
    const other = documentUrl.replace('localhost', '127.0.0.1');
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: other,
      redirect_uri: redirect,
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    });
    const res = await fetch(`${base}/api/oauth/authorize`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ownerToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: `?${query}` }),
      signal: AbortSignal.timeout(15_000),
    });
    assert.equal(res.status, 400);
    assert.match(((await res.json()) as { error: { message: string } }).error.message, /resolves to 127\.0\.0\.1, not a public address/);
  });
});
