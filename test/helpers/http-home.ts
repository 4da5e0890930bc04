// A test file's demo home served over a real HTTP server (MCP mounted at /mcp when asked), with bearer tokens
// made for the principals the test names, all started before the file's tests and closed after them.
import assert from 'node:assert/strict';
import { before } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Hearth } from '../../src/hearth.js';
import { startHttpServer, type HttpServer } from '../../src/http/server.js';
import type { Logger } from '../../src/log.js';
import type { Entity } from '../../src/devices/model.js';
import type { GeneratedTool } from '../../src/tools/types.js';
import { McpHttpHandler } from '../../src/mcp/http.js';
import { type Reply, request, type RequestOptions } from './http-client.js';
import { openHearth } from './home.js';
import { logSink } from './log-sink.js';
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

export interface ServedHearth {
  /** Opens Hearth (again after close(): a restart) with a fresh log sink, and serves it. */
  open(): Promise<void>;
  /** Closes the server, then Hearth. */
  close(): Promise<void>;
  readonly hearth: Hearth;
  /** What the Hearth opened last has logged. */
  readonly logs: ReturnType<typeof logSink>;
  /** The HTTP server's address. */
  readonly url: string;
  /** The bearer secrets of OWNER_AND_GUEST's tokens for the Hearth opened last. */
  readonly owner: string;
  readonly guest: string;
  entity(id: string): Entity | undefined;
  /** The actuator tool acting on this entity, if it has one. */
  actuatorToolOf(entityId: string): GeneratedTool | undefined;
}

/**
 * A Hearth the test opens itself, and may restart, on `brokerUrl()` with its database in `dir` (MQTT 3.1.1, no
 * Homie), `prepare` run on each opening (the test's rules), served with an owner's and a guest's token
 * (serveWithOwnerAndGuest). For tests that watch what survives a restart: forged devices, away owners.
 */
export function servedHearth(brokerUrl: () => string, dir: string, prepare: (hearth: Hearth) => void): ServedHearth {
  let hearth: Hearth | undefined;
  let server: HttpServer | undefined;
  let logs = logSink('debug');
  let owner = '';
  let guest = '';
  const h = () => started(hearth, 'Hearth');
  return {
    async open() {
      logs = logSink('debug');
      hearth = await openHearth(brokerUrl(), dir, logs.log, { 'mqtt.protocolVersion': '4', 'discovery.homie.enabled': false });
      prepare(hearth);
      ({ server, owner, guest } = await serveWithOwnerAndGuest(hearth, logs.log));
    },
    async close() {
      await server?.close();
      await hearth?.close();
      server = hearth = undefined;
    },
    get hearth() {
      return h();
    },
    get logs() {
      return logs;
    },
    get url() {
      return started(server, 'the HTTP server').url;
    },
    get owner() {
      return owner;
    },
    get guest() {
      return guest;
    },
    entity: (id) => h().bridge.registry.entity(id),
    actuatorToolOf: (entityId) =>
      h()
        .tools.all()
        .find((t) => t.capability === 'actuator' && t.meta.entityIds.includes(entityId)),
  };
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
