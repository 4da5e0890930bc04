// `hearth chat`: talk to the home in a terminal. Answers stream as they come, every tool call is shown, and a
// person is asked inline whenever a policy confirm rule holds an action (or for every action, with --ask).
// The conversation is the daemon's `chat` stream (JSON lines, src/daemon/schema.ts); with no daemon the same
// stream runs in this process. This file only renders it and carries what the person types.
import { createInterface, type Interface } from 'node:readline';
import { PassThrough, type Readable, type Writable } from 'node:stream';
import type { Command } from 'commander';
import type { AgentEvent } from '../agent/types.js';
import type { Answers, ChatClientMessage, ChatServerMessage } from '../daemon/schema.js';
import { CliFailure } from './failure.js';
import { configOrExit, databasePathOrExit, loggerFor, refuseRemoteDaemon, refuseServedBroker, withConfigOptions, type CommonFlags } from './options.js';
import { reachDaemon } from './via-daemon.js';

interface ChatFlags {
  as?: string;
  ask?: boolean;
  ephemeral?: boolean;
  session?: string;
}

/** What an approval question takes; any other line is the next thing said (and the action is denied). */
const APPROVAL_ANSWERS = new Set(['', 'y', 'yes', 'a', 'always', 'n', 'no']);

/** What `help` prints: the examples the daemon made of this home (none from a model that does not know it). */
function helpText(examples: readonly string[]): string {
  return [
    examples.length ? 'Say what you want in your own words, for example:' : 'Say what you want in your own words.',
    ...examples.map((e) => `  ${e}`),
    'An action a rule holds asks here first: y (yes, once), a (always, for that tool), n or Enter (no).',
    'help or /help shows this; /quit (or Ctrl+D) leaves; Ctrl+C stops an answer under way.',
    '',
  ].join('\n');
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

  /** Put a line back: the next `next()` gives it again (a line that was not the answer to a question). */
  putBack(line: string): void {
    this.queue.unshift(line);
  }

  next(): Promise<string | undefined> {
    if (this.queue.length) return Promise.resolve(this.queue.shift());
    if (this.closed) return Promise.resolve(undefined);
    return new Promise((resolve) => (this.waiting = resolve));
  }
}

/** The two ends of a chat stream: where the daemon's messages come from and where the person's go. */
interface ChatLink {
  hello: Answers['chat'];
  from: Readable;
  to: Writable;
  /** The connection is gone. */
  closed: Promise<void>;
}

export function registerChat(program: Command): void {
  withConfigOptions(program.command('chat'))
    .description('chat with the home: type what you want ("turn on the kitchen light"); help for more, /quit to leave')
    .option('--as <principal>', 'who is speaking (default: cli:<your user>, an owner)')
    .option('--ask', 'ask before every action, not only those a confirm rule holds')
    .option('--ephemeral', 'keep no history of this conversation')
    .option('--session <id>', 'resume an earlier conversation')
    .action(async (flags: CommonFlags & ChatFlags) => {
      const params = { as: flags.as, ask: flags.ask, ephemeral: flags.ephemeral, session: flags.session };
      const { checkParams } = await import('../daemon/schema.js');
      const { ControlError } = await import('../daemon/protocol.js');
      const checked = checkParams('chat', params);
      const client = await reachDaemon(await databasePathOrExit(flags), flags);
      try {
        if (client) {
          const { socket, leftover, answer } = await client.stream<Answers['chat']>('chat', checked);
          const from = new PassThrough();
          if (leftover) from.write(leftover);
          socket.pipe(from);
          const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
          const code = await converse({ hello: answer, from, to: socket, closed }, flags);
          socket.end();
          // stdin may still be open (a pipe nobody closes): the chat is over, so is the command.
          process.exit(code);
        }
        const loaded = await configOrExit(flags);
        await refuseServedBroker(loaded.config.database.path, (await import('../bridge.js')).brokerUrl(loaded.config));
        const log = await loggerFor(loaded, flags.logLevel ?? 'warn');
        const { Hearth } = await import('../hearth.js');
        const { openChat } = await import('../daemon/methods/chat.js');
        const hearth = await Hearth.open({ config: loaded.config, log, connectWaitMs: 5000, announce: false });
        try {
          await refuseRemoteDaemon(hearth.bridge);
          const chat = await openChat(hearth, checked);
          const toServer = new PassThrough();
          const fromServer = new PassThrough();
          const serving = chat.serve(toServer, fromServer);
          process.exitCode = await converse({ hello: chat.hello, from: fromServer, to: toServer, closed: serving }, flags);
          toServer.end();
          await serving;
        } finally {
          await hearth.close();
          process.stdin.unref();
        }
      } catch (err) {
        if (err instanceof ControlError) throw new CliFailure(err.message.replace(/^as /, '--as '), 1);
        throw err;
      }
    });
}

/** The conversation at this terminal over a chat link; returns the exit code. */
async function converse(link: ChatLink, _flags: ChatFlags): Promise<number> {
  const tty = !!process.stdout.isTTY;
  const out = (s: string) => void process.stdout.write(s);
  const send = (m: ChatClientMessage) => {
    if (link.to.writable) link.to.write(`${JSON.stringify(m)}\n`);
  };
  const rl = createInterface({ input: process.stdin, terminal: !!process.stdin.isTTY });
  const lines = new Lines(rl);
  const messages = createInterface({ input: link.from, crlfDelay: Infinity })[Symbol.asyncIterator]();
  const next = async (): Promise<ChatServerMessage | undefined> => {
    const r = await messages.next();
    return r.done ? undefined : (JSON.parse(r.value) as ChatServerMessage);
  };
  let inTurn = false;
  let interruptAsked = false;
  const onInterrupt = () => {
    if (inTurn) {
      interruptAsked = true;
      send({ interrupt: true });
      out('\n(interrupted)\n');
    } else rl.close();
  };
  process.on('SIGINT', onInterrupt);
  try {
    out(`Hearth chat as ${link.hello.principal} with ${link.hello.engine}; ${link.hello.tools} tools. help for help, /quit to leave.\n`);
    for (;;) {
      if (tty) out('\nyou> ');
      const text = await lines.next();
      if (text === undefined || /^\/(quit|exit)$/.test(text.trim())) break;
      if (!text.trim()) continue;
      if (/^\/?help$/i.test(text.trim())) {
        out(helpText(link.hello.examples ?? []));
        continue;
      }
      send({ say: text });
      inTurn = true;
      interruptAsked = false;
      out(tty ? 'hearth> ' : '');
      let midLine = false;
      for (;;) {
        const m = await next();
        if (!m) return 1; // the daemon went away
        if ('problem' in m) {
          out(`${midLine ? '\n' : ''}${m.problem}\n`);
          midLine = false;
          if (m.unsaid) break;
          continue;
        }
        if ('turn' in m) {
          if (midLine) out('\n');
          if (m.turn.stopReason === 'error') out(`(error: ${m.turn.error})\n`);
          // Ctrl+C after the answer was complete (it crossed the turn's end): it meant the prompt's Ctrl+C.
          if (interruptAsked && m.turn.stopReason !== 'interrupted') rl.close();
          break;
        }
        if ('event' in m) midLine = m.answered ? midLine : await show(m.event, m.preview, midLine);
      }
      inTurn = false;
    }
    send({ bye: true });
    for (let m = await next(); m; m = await next()) {
      if ('end' in m && m.end.saved && m.end.session) {
        out(`${tty ? '\n' : ''}(conversation saved as ${m.end.session}; --session ${m.end.session} resumes it)\n`);
      }
    }
    return 0;
  } finally {
    process.off('SIGINT', onInterrupt);
    rl.close();
  }

  async function show(event: AgentEvent, preview: { effect: string; reason: string } | undefined, midLine: boolean): Promise<boolean> {
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
        const why = preview?.effect === 'confirm' ? ` (${preview.reason})` : '';
        out(`${nl}  ? ${name} ${JSON.stringify(event.args)} needs your approval${why}. Allow? [y]es / [a]lways / [N]o: `);
        const line = (await lines.next()) ?? '';
        const answer = line.trim().toLowerCase();
        // Only an answer answers: anything else typed (the next thing to say) is a no, and is said next, not lost.
        const known = APPROVAL_ANSWERS.has(answer);
        if (!known) lines.putBack(line);
        if (!tty) out(`${known ? answer : ''}\n`);
        if (!known) out(DIM(`  (not a yes: denied; "${short(line.trim(), 60)}" comes next)\n`, tty));
        // "always" stops the asking for this tool; a confirm rule still asks each time.
        send({
          permission: { requestId: event.request_id, decision: answer.startsWith('a') ? 'allow_always' : answer.startsWith('y') ? 'allow_once' : 'deny' },
        });
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
}
