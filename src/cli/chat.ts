// `hearth chat`: talk to the home in a terminal. Answers stream as they come,
// every tool call is shown, and a person is asked inline whenever a policy
// confirm rule holds an action (or for every action, with --ask).
import { createInterface, type Interface } from 'node:readline';
import type { Command } from 'commander';
import type { AgentEvent } from '../agent/types.js';
import { TurnActiveError } from '../agent/types.js';
import { Hearth } from '../hearth.js';
import { cliPrincipal } from './principal.js';
import { configOrExit, loggerFor, withConfigOptions, type CommonFlags } from './options.js';

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

export function registerChat(program: Command): void {
  withConfigOptions(program.command('chat'))
    .description('chat with the home: type what you want ("turn on the kitchen light"); /quit to leave')
    .option('--as <principal>', 'who is speaking (default: cli:<your user>, an owner)')
    .option('--ask', 'ask before every action, not only those a confirm rule holds')
    .option('--ephemeral', 'keep no history of this conversation')
    .option('--session <id>', 'resume an earlier conversation')
    .action(async (flags: CommonFlags & { as?: string; ask?: boolean; ephemeral?: boolean; session?: string }) => {
      const loaded = await configOrExit(flags);
      const log = await loggerFor(loaded, flags.logLevel ?? 'warn');
      const hearth = await Hearth.open({ config: loaded.config, log, connectWaitMs: 5000, announce: false });
      const tty = !!process.stdout.isTTY;
      const out = (s: string) => process.stdout.write(s);
      const rl = createInterface({ input: process.stdin, terminal: !!process.stdin.isTTY });
      const lines = new Lines(rl);
      try {
        if (!hearth.bridge.connection.connected) {
          out(`hearth: cannot reach the broker at ${hearth.bridge.connection.options.url}: is \`hearth start\` running?\n`);
          process.exitCode = 1;
          return;
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
        process.on('SIGINT', () => {
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
      } finally {
        rl.close();
        await hearth.close();
      }
    });
}
