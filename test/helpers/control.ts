// A raw client of the daemon's control socket: JSON lines in, JSON lines out, nothing of Hearth's own client
// or command line, so a test sees the protocol as any other program would.
import { createConnection, type Socket } from 'node:net';

export interface Answer {
  id: unknown;
  result?: any;
  error?: { code: number; message: string };
}

export interface RawControl {
  socket: Socket;
  closed: Promise<void>;
  /** Send one line; resolves with the next answer line. */
  send(line: string): Promise<Answer>;
  /** Send a request; resolves with its answer. */
  request(method: string, params?: Record<string, unknown>): Promise<Answer>;
  /** The next line (after a stream has started: the stream's own messages). */
  next(): Promise<any>;
  /** Write a line without waiting for an answer. */
  write(value: unknown): void;
}

export async function rawControl(path: string): Promise<RawControl> {
  const socket: Socket = createConnection(path);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('error', reject);
  });
  socket.setEncoding('utf8');
  let buffered = '';
  const lines: any[] = [];
  let taken = 0;
  const waiters: Array<() => void> = [];
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      lines.push(JSON.parse(buffered.slice(0, nl)));
      buffered = buffered.slice(nl + 1);
      for (const w of waiters.splice(0)) w();
    }
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  let nextId = 1;
  const next = async () => {
    while (lines.length <= taken) {
      let gone = false;
      await Promise.race([new Promise<void>((r) => waiters.push(r)), closed.then(() => (gone = true))]);
      if (gone && lines.length <= taken) throw new Error('the connection closed before the next line');
    }
    return lines[taken++];
  };
  const c: RawControl = {
    socket,
    closed,
    async send(line) {
      socket.write(`${line}\n`);
      return next();
    },
    request(method, params = {}) {
      return c.send(JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }));
    },
    next,
    write(value) {
      socket.write(`${JSON.stringify(value)}\n`);
    },
  };
  return c;
}
