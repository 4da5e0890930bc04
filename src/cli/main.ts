#!/usr/bin/env node
// The `hearth` command. One file per subcommand beside this one, each imported only
// when it is the one asked for: `hearth --version` loads nothing of the app, and a
// command that asks the running daemon loads little more than its own file.
import { readFileSync } from 'node:fs';

// `hearth audit tail -f | head`: the reader went away. Stop quietly, as other command-line tools do.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

const version = () => (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

type Register = (program: import('commander').Command) => void;
/** Subcommand name -> its module's register function. */
const COMMANDS: Record<string, () => Promise<Register[]>> = {
  start: async () => [(await import('./start.js')).registerStart],
  devices: async () => [(await import('./devices.js')).registerDevices],
  simulate: async () => [(await import('./simulate.js')).registerSimulate],
  tools: async () => [(await import('./tools.js')).registerTools],
  call: async () => [(await import('./call.js')).registerCall],
  chat: async () => [(await import('./chat.js')).registerChat],
  agent: async () => [(await import('./agent-rpc.js')).registerAgentRpc],
  policy: async () => [(await import('./policy.js')).registerPolicy],
  audit: async () => [(await import('./audit.js')).registerAudit],
  approvals: async () => [(await import('./approvals.js')).registerApprovals],
  approve: async () => [(await import('./approvals.js')).registerApprovals],
  deny: async () => [(await import('./approvals.js')).registerApprovals],
  token: async () => [(await import('./token.js')).registerToken],
  mcp: async () => [(await import('./mcp.js')).registerMcp],
  memory: async () => [(await import('./memory.js')).registerMemory],
  broker: async () => [(await import('./broker.js')).registerBroker],
  areas: async () => [(await import('./home.js')).registerAreas],
  floors: async () => [(await import('./home.js')).registerFloors],
  home: async () => [(await import('./home.js')).registerHome],
};
/** The order `hearth --help` lists them in. */
const ORDER = [
  'start',
  'devices',
  'simulate',
  'tools',
  'call',
  'chat',
  'agent',
  'policy',
  'audit',
  'approvals',
  'token',
  'mcp',
  'memory',
  'broker',
  'areas',
  'floors',
  'home',
];

async function main(argv: string[]): Promise<void> {
  const first = argv[2];
  if (argv.length === 3 && (first === '--version' || first === '-V')) {
    process.stdout.write(`${version()}\n`);
    return;
  }
  const { Command } = await import('commander');
  const { CliFailure } = await import('./failure.js');
  let running: import('commander').Command | undefined;
  const program = new Command('hearth')
    .description('Hearth: MQTT devices as host tools for an agent, with policy and audit')
    .version(version())
    .showHelpAfterError()
    .hook('preAction', (_program, action) => {
      running = action;
    });
  // One command's module when one is named; every module for help and mistakes.
  const names = first && COMMANDS[first] ? [first] : ORDER;
  for (const name of names) for (const register of await COMMANDS[name]()) register(program);
  // A mistake in a command's words (a missing argument, an unknown option) is one line, then that command's usage
  // line, not its whole help.
  const usageAfterErrors = (cmd: import('commander').Command, path: string) => {
    for (const sub of cmd.commands) {
      const full = `${path} ${sub.name()}`;
      sub.showHelpAfterError(`usage: ${full} ${sub.usage()}\n(${full} --help says more)`);
      usageAfterErrors(sub, full);
    }
  };
  usageAfterErrors(program, 'hearth');
  const typo = unknownSubcommand(program, argv.slice(2));
  if (typo) {
    process.stderr.write(`hearth: ${typo}\n`);
    process.exitCode = 2;
    return;
  }
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (!(err instanceof CliFailure)) throw err;
    // Bad input stops the way commander stops on its own mistakes, with our exit code. The message already
    // names the option and gives an example, so the whole help is not printed after it.
    const command = running ?? program;
    command.showHelpAfterError(false);
    command.error(`hearth: ${err.message}`, { exitCode: err.exitCode, code: 'hearth.failure' });
  }
}

main(process.argv).catch((err: unknown) => {
  // One line; the stack only when asked for.
  const verbose = process.argv.includes('--verbose');
  process.stderr.write(`hearth: ${err instanceof Error ? (verbose ? (err.stack ?? err.message) : err.message) : String(err)}\n`);
  process.exit(1);
});

/**
 * `hearth policy alow ...`, `token craete x`: a word after a group that is none of its commands. Commander would
 * hand it to the group's default command ("unknown option", "too many arguments for 'list'"); say what is wrong
 * instead, in one line, with the nearest command. A default command that takes arguments keeps its word unless
 * the word is a near miss of a command.
 */
function unknownSubcommand(program: import('commander').Command, args: string[]): string | undefined {
  const [first, word] = args;
  if (!first || !word || word.startsWith('-')) return undefined;
  const group = program.commands.find((c) => c.name() === first || c.aliases().includes(first));
  if (!group?.commands.length) return undefined;
  const names = group.commands.flatMap((c) => [c.name(), ...c.aliases()]);
  if (names.includes(word)) return undefined;
  const near = names.filter((n) => distance(n, word) <= 2).sort((a, b) => distance(a, word) - distance(b, word));
  const fallback = group.commands.find((c) => c.name() === (group as unknown as { _defaultCommandName?: string })._defaultCommandName);
  if (!near.length && fallback && fallback.registeredArguments.length > 0) return undefined;
  const list = group.commands.map((c) => c.name()).join(', ');
  return `unknown command '${first} ${word}'${near.length ? ` (did you mean '${first} ${near[0]}'?)` : ''}; '${first}' has: ${list}`;
}

/** Edit distance (insert, delete, substitute, swap of neighbours), for near misses of short words. */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.length][b.length];
}
