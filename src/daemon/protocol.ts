// The control protocol: newline-delimited JSON-RPC 2.0, one request per line,
// one response line per request. A command's answer is what the command prints.

/** JSON-RPC error codes (the standard ones, and one for "the command failed"). */
export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;
export const UNAUTHORIZED = -32001;

/** Longest request line accepted; longer input is refused and the connection closed. */
export const MAX_LINE_BYTES = 1024 * 1024;

/** What a command prints, wherever it ran: the client writes it out as is. */
export interface CommandOutput {
  stdout: string;
  stderr?: string;
  exitCode?: number;
  /** An image result `hearth call --image-out` saves (base64). */
  image?: string;
}

export class ControlError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'ControlError';
  }
}

export interface RpcRequest {
  jsonrpc: '2.0';
  id?: string | number | null;
  method: string;
  params?: Record<string, unknown>;
}
