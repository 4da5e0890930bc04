// What the MCP tests repeat: a result's text, and the demo home served over MCP's Streamable HTTP handler on a
// plain node:http server, with the SDK clients a test opens closed before the server.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { before } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { mcpHttpListener, type McpHttpListener } from '../../src/mcp/http.js';
import { type HomeInTest, started, useHome } from '../helpers/use-home.js';

type Content = CallToolResult['content'][number];

/** The text parts of a tool result, a line each. */
export const textOf = (r: CallToolResult) =>
  r.content
    .filter((c): c is Extract<Content, { type: 'text' }> => c.type === 'text')
    .map((c) => c.text)
    .join('\n');

export interface McpHome {
  home: HomeInTest;
  /** Where MCP answers (…/mcp). */
  readonly url: URL;
  readonly listener: McpHttpListener;
  /** Closes `client` after the tests, before the server. */
  track(client: Client): Client;
  /** The GET notification streams the server has answered and still holds open (an SDK client opens one after initialize). */
  notificationStreams(): Set<ServerResponse>;
}

export function useMcpHome(options: { sensorUpdateMs?: number } = {}): McpHome {
  const home = useHome();
  let listener: McpHttpListener | undefined;
  let url: URL | undefined;
  const streams = new Set<ServerResponse>();
  before(async () => {
    const l = mcpHttpListener({ hearth: home.hearth, ...options });
    const http: Server = createServer((req, res) => {
      if (req.method === 'GET') {
        streams.add(res);
        res.on('close', () => streams.delete(res));
      }
      return l(req, res);
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    home.cleanup(async () => {
      await l.handler.close();
      http.closeAllConnections();
      await new Promise((r) => http.close(r));
    });
    listener = l;
    url = new URL(`http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`);
  });
  return {
    home,
    get url() {
      return started(url, 'the MCP server');
    },
    get listener() {
      return started(listener, 'the MCP server');
    },
    notificationStreams: () => new Set([...streams].filter((res) => res.headersSent && res.statusCode === 200)),
    track(client) {
      home.cleanup(() => client.close().catch(() => undefined));
      return client;
    },
  };
}
