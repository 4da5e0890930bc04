// What an API handler sees and returns.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Hearth } from '../hearth.js';
import type { Logger } from '../log.js';
import type { Principal } from '../tools/types.js';
import type { SseHub } from './sse.js';

export interface ApiRequest {
  req: IncomingMessage;
  res: ServerResponse;
  /** `:name` segments of the route pattern, URI-decoded. */
  params: Record<string, string>;
  query: URLSearchParams;
  /** Who is asking (for routes without auth: an anonymous principal). */
  principal: Principal;
  /** The name of the bearer token the request came with (undefined without one, or with auth off). */
  token?: string;
  /** The body as a JSON object ({} when empty), size-capped; throws HttpError. */
  body(): Promise<Record<string, unknown>>;
}

/** A JSON answer with a status other than 200. */
export class Reply {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {}
}

/**
 * A handler returns the JSON to send (200), a Reply, or nothing when it wrote
 * the response itself (event streams).
 */
export type Handler = (r: ApiRequest) => Promise<unknown> | unknown;

export interface Route {
  method: 'GET' | 'POST' | 'DELETE';
  /** `/api/sessions/:id/prompt`. */
  path: string;
  /** false: no token needed (health). Default true. */
  auth?: boolean;
  handler: Handler;
}

/** What the API modules share. */
export interface ApiContext {
  hearth: Hearth;
  log: Logger;
  sse: SseHub;
}

export function isOwner(principal: Principal): boolean {
  return principal.roles.includes('owner');
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = `${JSON.stringify(body)}\n`;
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(text);
}
