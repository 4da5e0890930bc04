// JSON-RPC errors as MCP clients read them: a short message naming what was
// wrong, with the code the spec gives it (-32602 for an unknown tool and for
// malformed params). The SDK's McpError writes "MCP error <code>: " into its
// message and its client adds the same prefix again when it reads an error,
// so an error thrown here, or one the SDK raised while checking a request's
// params (a raw validation dump under -32603), goes out as a plain message.
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';

export const INVALID_PARAMS = ErrorCode.InvalidParams;

/** An error the SDK sends as `{code, message, data}`, its message unprefixed. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

const PREFIX = /^MCP error -?\d+: /;

interface Issue {
  path?: ReadonlyArray<PropertyKey>;
  message?: string;
}

/** The first problem of a schema validation error, as `params.arguments: expected object`. */
function firstIssue(err: unknown): string | undefined {
  const issues = (err as { issues?: unknown }).issues;
  if (!Array.isArray(issues) || !issues.length) return undefined;
  const issue = issues[0] as Issue;
  const path = (issue.path ?? []).map(String).join('.');
  return `${path || 'params'}: ${String(issue.message ?? 'invalid').slice(0, 200)}`;
}

/** What goes back for an error a request handler (or the SDK's check of its params) threw. */
export function toRpcError(method: string, err: unknown): unknown {
  if (err instanceof RpcError) return err;
  const issue = firstIssue(err);
  if (issue) return new RpcError(INVALID_PARAMS, `invalid ${method} params: ${issue.replace(/^params\./, '')}`);
  const e = err as { code?: unknown; message?: unknown; data?: unknown };
  if (typeof e?.code === 'number' && typeof e.message === 'string') {
    let message = e.message.replace(PREFIX, '');
    // The SDK's own check of a tools/call request puts the whole validation report in the message.
    const report = /^Invalid tools\/call request: ([\s\S]*)$/.exec(message);
    if (report) {
      let detail = 'not a valid tools/call request (name: a string; arguments: an object)';
      try {
        const parsed = JSON.parse(report[1]) as Issue[];
        detail = firstIssue({ issues: parsed }) ?? detail;
      } catch {
        // not JSON: keep the short sentence
      }
      message = `invalid tools/call params: ${detail.replace(/^params\./, '')}`;
    }
    return new RpcError(e.code, message, e.data);
  }
  return err;
}

/**
 * Every request handler of this server answers errors through toRpcError,
 * including the SDK's own parsing of params, which runs before a handler is
 * called. Call once, after the handlers are set.
 */
export function cleanRpcErrors(server: Server): void {
  const handlers = (server as unknown as { _requestHandlers?: unknown })._requestHandlers;
  if (!(handlers instanceof Map)) throw new Error('the MCP SDK keeps its request handlers elsewhere: cleanRpcErrors needs updating');
  type Handler = (request: unknown, extra: unknown) => Promise<unknown>;
  const map = handlers as Map<string, Handler>;
  for (const [method, handler] of map) {
    map.set(method, async (request: unknown, extra: unknown) => {
      try {
        return await handler(request, extra);
      } catch (err) {
        throw toRpcError(method, err);
      }
    });
  }
}
