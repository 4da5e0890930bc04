// A test file's demo home served over a real HTTP server (MCP mounted at /mcp when asked), with bearer tokens
// made for the principals the test names, all started before the file's tests and closed after them.
import assert from 'node:assert/strict';
import { before } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Hearth } from '../../src/hearth.js';
import { startHttpServer, type HttpServer } from '../../src/http/server.js';
import type { Logger } from '../../src/log.js';
import { McpHttpHandler } from '../../src/mcp/http.js';
import { type Reply, request, type RequestOptions } from './http-client.js';
import { type HomeInTest, started, type UseHomeOptions, useHome } from './use-home.js';

export interface TokenFor {
  /** The token's name. */
  name: string;
  principal: string;
  /** Roles set for the principal; none set when left out. */
  roles?: string[];
  /** The area the token's requests speak from. */
  area?: string;
}

/** The usual pair: an owner's phone, and a guest's tablet with the guest role. */
export const OWNER_AND_GUEST: Record<'owner' | 'guest', TokenFor> = {
  owner: { name: 'owner-phone', principal: 'http:owner', roles: ['owner'] },
  guest: { name: 'guest-tablet', principal: 'http:guest', roles: ['guest'] },
};

/**
 * A Hearth the test opened itself (and may reopen: a restart), served over a real HTTP server, with an owner's and a
 * guest's bearer token (OWNER_AND_GUEST). The caller closes the server before the Hearth.
 */
export async function serveWithOwnerAndGuest(hearth: Hearth, log: Logger): Promise<{ server: HttpServer; owner: string; guest: string }> {
  const server = await startHttpServer({ hearth, host: '127.0.0.1', port: 0, log: log.child({ part: 'http' }), mounts: [] });
  const [owner, guest] = [OWNER_AND_GUEST.owner, OWNER_AND_GUEST.guest].map((t) => {
    // Named per opening: a reopened Hearth keeps the earlier opening's tokens in its database.
    const secret = hearth.tokens.create(`${t.name}-${Date.now()}`, t.principal, t.area).secret;
    if (t.roles) hearth.policy.setRoles(t.principal, t.roles);
    return secret;
  });
  return { server, owner: owner!, guest: guest! };
}

export interface UseHttpHomeOptions<K extends string> extends UseHomeOptions {
  /** Tokens to make once the server is up, by a key the test reads them with (`secret(key)`). */
  tokens?: Record<K, TokenFor>;
  /** Mount MCP's streamable HTTP handler at /mcp. */
  mcp?: boolean;
}

export interface HttpHomeInTest<K extends string> extends HomeInTest {
  server: HttpServer;
  /** The bearer secret of the token made for `key`. */
  secret(key: K): string;
  /** A request to the server at `path`; the answer read as text and JSON. */
  api(method: string, path: string, options?: RequestOptions): Promise<Reply>;
  /** An MCP client connected to /mcp with `token`, closed with the home. */
  mcpClient(token: string, name?: string): Promise<Client>;
  /** One user message through /v1/chat/completions (model `hearth`) with the token made for `key`: the answer's text. */
  chat(key: K, content: string): Promise<string>;
}

export function useHttpHome<K extends string = never>(options: UseHttpHomeOptions<K> = {}): HttpHomeInTest<K> {
  // The server and tokens are made once for the file; a home per test would leave them on the first one.
  if (options.eachTest) throw new Error('useHttpHome: eachTest is not supported');
  const home = useHome(options);
  let server: HttpServer | undefined;
  const secrets = new Map<string, string>();
  before(async () => {
    const mcp = options.mcp ? new McpHttpHandler({ hearth: home.hearth }) : undefined;
    server = await startHttpServer({
      hearth: home.hearth,
      host: '127.0.0.1',
      port: 0,
      log: home.logs.log.child({ part: 'http' }),
      mounts: mcp ? [{ path: '/mcp', handle: (req, res, principal, token) => mcp.handle(req, res, principal, token), close: () => mcp.close() }] : [],
    });
    home.cleanup(() => server?.close());
    for (const [key, t] of Object.entries(options.tokens ?? {}) as Array<[K, TokenFor]>) {
      secrets.set(key, home.hearth.tokens.create(t.name, t.principal, t.area).secret);
      if (t.roles) home.hearth.policy.setRoles(t.principal, t.roles);
    }
  });
  const url = () => started(server, 'the HTTP server').url;
  const more = {
    get server() {
      return started(server, 'the HTTP server');
    },
    secret(key: K) {
      return started(secrets.get(key), `the token for ${key}`);
    },
    api: (method: string, path: string, opts: RequestOptions = {}) => request(`${url()}${path}`, { ...opts, method }),
    async chat(key: K, content: string) {
      const r = await request(`${url()}/v1/chat/completions`, {
        method: 'POST',
        token: started(secrets.get(key), `the token for ${key}`),
        body: { model: 'hearth', messages: [{ role: 'user', content }] },
        strictJson: true,
      });
      assert.equal(r.status, 200, r.text);
      return r.json.choices[0].message.content as string;
    },
    async mcpClient(token: string, name = 'hearth-test') {
      const client = new Client({ name, version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${url()}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
      home.cleanup(() => client.close().catch(() => undefined));
      return client;
    },
  };
  // Getters stay getters: the home's own are reached through the prototype.
  return Object.create(home, Object.getOwnPropertyDescriptors(more));
}
