// The control protocol, version 2: newline-delimited JSON-RPC 2.0, one request per line, one answer line per
// request. Answers are data (src/daemon/schema.ts says each method's params and answer); the command line is one
// client of it and turns answers into text.

/** The protocol's version, said by `hello`; a client that needs another refuses to use the daemon. */
export const PROTOCOL_VERSION = 2;

/** JSON-RPC error codes: the standard ones, and Hearth's own. */
export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;
export const UNAUTHORIZED = -32001;
/** What the request names is not there (no such tool, approval, rule, token, memory entry). */
export const NOT_FOUND = -32004;
/** The request is well formed, but what it asks can no longer be done (an approval already decided, a token already revoked). */
export const NOT_DONE = -32005;

/** Longest request line accepted; longer input is refused and the connection closed. */
export const MAX_LINE_BYTES = 1024 * 1024;

export class ControlError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'ControlError';
  }
}

export const badParams = (message: string) => new ControlError(INVALID_PARAMS, message);
export const notFound = (message: string) => new ControlError(NOT_FOUND, message);
export const notDone = (message: string) => new ControlError(NOT_DONE, message);

export interface RpcRequest {
  jsonrpc: '2.0';
  id?: string | number | null;
  method: string;
  params?: Record<string, unknown>;
}
