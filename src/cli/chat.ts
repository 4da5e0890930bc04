// `hearth chat`: talk to the home in a terminal. Answers stream as they come,
// every tool call is shown, and a person is asked inline whenever a policy
// confirm rule holds an action (or for every action, with --ask).
import { createInterface, type Interface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import type { Command } from 'commander';
import type { AgentEvent } from '../agent/types.js';
import { TurnActiveError } from '../agent/types.js';
import type { ControlClient } from '../daemon/control-client.js';
import type { Hearth } from '../hearth.js';
import { cliPrincipal } from './principal.js';
import { configOrExit, databasePathOrExit, loggerFor, refuseServedBroker, withConfigOptions, type CommonFlags } from './options.js';
import { reachDaemon } from './via-daemon.js';

export interface ChatParams {
  as?: string;
  ask?: boolean;
  ephemeral?: boolean;
  session?: string;
  /** The person's terminal is a TTY (prompts and dim tool lines). */
  tty?: boolean;
}

export interface ChatIo {
  input: Readable;
  output: Writable;
  /** Readline in terminal mode (a local TTY). */
  terminal: boolean;
  /** Called with what an interrupt (Ctrl+C) should do. */
  onInterrupt(handler: () => void): void;
}

const DIM = (s: string, tty: boolean) => (tty ? `\x1b[2m${s}\x1b[0m` : s);
const short = (s: string, n = 160) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** Lines from stdin, one at a time, shared by the chat prompt and the approval questions. */
class Lines {
  private queue: string[] = [];
  private waiting?: (line: string | undefined) => void;
  private closed = false;

  constructor(rl: Interface) {
    rl.on('line', (line) => {
      if (this.waiting) {
        const w = this.waiting;
        this.waiting = undefined;
        w(line);
      } else this.queue.push(line);
    });
    rl.on('close', () => {
      this.closed = true;
      this.waiting?.(undefined);
    });
  }

  next(): Promise<string | undefined> {
    if (this.queue.length) return Promise.resolve(this.queue.shift());
    if (this.closed) return Promise.resolve(undefined);
    return new Promise((resolve) => (this.waiting = resolve));
  }
}

/** Ctrl+C, carried over the control socket to the daemon's chat. */
export const INTERRUPT = '\x03';

export function registerChat(program: Command): void {
  withConfigOptions(program.command('chat'))
    .description('chat with the home: type what you want ("turn on the kitchen light"); /quit to leave')
    .option('--as <principal>', 'who is speaking (default: cli:<your user>, an owner)')
    .option('--ask', 'ask before every action, not only those a confirm rule holds')
    .option('--ephemeral', 'keep no history of this conversation')
    .option('--session <id>', 'resume an earlier conversation')
    .action(async (flags: CommonFlags & ChatParams) => {
      const params: ChatParams = { as: flags.as, ask: flags.ask, ephemeral: flags.ephemeral, session: flags.session, tty: !!process.stdout.isTTY };
      const client = await reachDaemon(await databasePathOrExit(flags), flags);
      if (client) return relay(client, params);
      const loaded = await configOrExit(flags);
      await refuseServedBroker(loaded.config.database.path, (await import('../bridge.js')).brokerUrl(loaded.config));
      const log = await loggerFor(loaded, flags.logLevel ?? 'warn');
      const { Hearth } = await import('../hearth.js');
      const hearth = await Hearth.open({ config: loaded.config, log, connectWaitMs: 5000, announce: false });
      try {
        process.exitCode = await runChat(hearth, params, {
          input: process.stdin,
          output: process.stdout,
          terminal: !!process.stdin.isTTY,
          onInterrupt: (handler) => process.on('SIGINT', handler),
        });
      } finally {
        await hearth.close();
      }
    });
}

/**
 * The chat served by the daemon: this process carries the terminal's lines over its socket. Ctrl+C is
 * sent on as one ETX byte (a line never holds one): the daemon's chat interrupts the running turn, or ends
 * the chat when none runs, as a chat on its own does.
 */
async function relay(client: ControlClient, params: ChatParams): Promise<void> {
  const { socket, leftover } = await client.stream('chat', { ...params });
  if (leftover) process.stdout.write(leftover);
  process.on('SIGINT', () => {
    if (socket.writable) socket.write(INTERRUPT);
    else process.exit(130);
  });
  process.stdin.pipe(socket);
  socket.pipe(process.stdout);
  await new Promise<void>((resolve) => {
    socket.once('close', () => resolve());
    socket.once('error', () => resolve());
  });
  process.exit(process.exitCode ?? 0);
}

/** One chat on these streams with the Hearth given (the daemon's or the command's own); returns the exit code. */
export async function runChat(hearth: Hearth, flags: ChatParams, io: ChatIo): Promise<number> {
  const tty = !!flags.tty;
  const out = (s: string) => void io.output.write(s);
  const rl = createInterface({ input: io.input, terminal: io.terminal });
  const lines = new Lines(rl);
  try {
    if (!hearth.bridge.connection.connected) {
      out(`hearth: cannot reach the broker at ${hearth.bridge.connection.options.url}: is \`hearth start\` running?\n`);
      return 1;
    }
    const principal = cliPrincipal(hearth, flags.as);
    const agent = await hearth.agent();
    const session = await agent.open({ principal, permissions: 'jan', ephemeral: flags.ephemeral, id: flags.session });
    const engine = hearth.bridge.config.agent;
    out(
      `Hearth chat as ${principal.id} with ${engine.provider === 'intent' ? 'the offline intent model' : `${engine.model} at ${engine.baseUrl}`}; ` +
        `${session.tools.length} tools. /quit to leave.\n`,
    );
    let current: Awaited<ReturnType<typeof agent.prompt>> | undefined;
    io.onInterrupt(() => {
      if (current) {
        current.interrupt();
        out('\n(interrupted)\n');
      } else {
        rl.close();
      }
    });
    for (;;) {
      if (tty) out('\nyou> ');
      const text = await lines.next();
      if (text === undefined || /^\/(quit|exit)$/.test(text.trim())) break;
      if (!text.trim()) continue;
      try {
        current = await agent.prompt(session, text);
      } catch (err) {
        out(`${err instanceof TurnActiveError ? 'still answering the last message' : (err as Error).message}\n`);
        continue;
      }
      out(tty ? 'hearth> ' : '');
      let midLine = false;
      for await (const event of current) {
        midLine = await show(event, midLine);
      }
      const result = await current.result();
      current = undefined;
      if (midLine) out('\n');
      if (result.stopReason === 'error') out(`(error: ${result.error})\n`);
    }
    session.id && !flags.ephemeral && out(`${tty ? '\n' : ''}(conversation saved as ${session.id}; --session ${session.id} resumes it)\n`);

    async function show(event: AgentEvent, midLine: boolean): Promise<boolean> {
      const nl = midLine ? '\n' : '';
      switch (event.type) {
        case 'token':
          out(event.text);
          return true;
        case 'tool_call':
          out(`${nl}${DIM(`  → ${event.name.replace(/^host__/, '')} ${JSON.stringify(event.args ?? {})}`, tty)}\n`);
          return false;
        case 'tool_result':
          out(`${nl}${DIM(`  ← ${event.is_error ? 'failed: ' : ''}${short(event.content.split('\n')[0])}`, tty)}\n`);
          return false;
        case 'permission_request': {
          const name = event.tool_name.replace(/^host__/, '');
          const decision = hearth.tools.preview(name, event.args, principal);
          if (!flags.ask && decision?.effect === 'allow') {
            session.respondPermission(event.request_id, 'allow_once');
            return midLine;
          }
          const why = decision?.effect === 'confirm' ? ` (${decision.reason})` : '';
          out(`${nl}  ? ${name} ${JSON.stringify(event.args)} needs your approval${why}. Allow? [y]es / [a]lways / [N]o: `);
          const answer = ((await lines.next()) ?? '').trim().toLowerCase();
          if (!tty) out(`${answer}\n`);
          // "always" stops the asking for this tool; a confirm rule still asks each time.
          session.respondPermission(event.request_id, answer.startsWith('a') ? 'allow_always' : answer.startsWith('y') ? 'allow_once' : 'deny');
          return false;
        }
        case 'subagent_start':
          out(`${nl}${DIM(`  ⇉ helper ${event.name} started${event.task ? `: ${short(event.task, 100)}` : ''}`, tty)}\n`);
          return false;
        case 'subagent_end':
          out(`${nl}${DIM(`  ⇇ helper ${event.name} ${event.error ? `stopped: ${event.error}` : 'finished'}`, tty)}\n`);
          return false;
        case 'error':
          out(`${nl}(${event.code}: ${event.message})\n`);
          return false;
        default:
          return midLine;
      }
    }
    return 0;
  } finally {
    rl.close();
  }
}
