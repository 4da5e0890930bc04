// MCP over stdio: one session for one principal on this process's stdin and
// stdout. stdout carries the protocol only (logs go to stderr).
import type { Readable, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Hearth } from '../hearth.js';
import type { Logger } from '../log.js';
import type { Principal } from '../tools/types.js';
import { HearthMcpSession } from './server.js';

export interface StdioOptions {
  hearth: Hearth;
  principal: () => Principal;
  log?: Logger;
  stdin?: Readable;
  stdout?: Writable;
  /** Offer an owner the tools that arrange the home. */
  setup?: boolean;
}

export interface StdioServing {
  session: HearthMcpSession;
  /** Resolves when the client went away (stdin ended) or close() was called. */
  closed: Promise<void>;
  close(): Promise<void>;
}

export async function serveStdio(options: StdioOptions): Promise<StdioServing> {
  const stdin = options.stdin ?? process.stdin;
  const stdout = options.stdout ?? process.stdout;
  const session = new HearthMcpSession({ hearth: options.hearth, principal: options.principal, log: options.log, session: null, setup: options.setup });
  const transport = new StdioServerTransport(stdin, stdout);
  let done!: () => void;
  const closed = new Promise<void>((resolve) => (done = resolve));
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= session.close().finally(done);
    return closing;
  };
  session.server.onclose = () => void close();
  // The transport does not notice the client hanging up: stdin ending is that.
  stdin.once('end', () => void close());
  stdin.once('close', () => void close());
  // A client that went away while we answer: stop, do not crash on EPIPE.
  stdout.on('error', (err: NodeJS.ErrnoException) => {
    options.log?.debug({ err }, 'stdout closed');
    void close();
  });
  await session.server.connect(transport);
  return { session, closed, close };
}
