// `hearth mcp`: the host tools as an MCP server on stdin/stdout, for Jan
// Desktop, Claude Desktop or any MCP client. Like `hearth call`, it connects
// to the configured broker (by default the embedded one of a running
// `hearth start`) and shares its database (policy, approvals, audit).
import type { Command } from 'commander';
import type { ControlClient } from '../daemon/control-client.js';
import { hearthCommand } from './command-name.js';
import { CliFailure, collect } from './failure.js';
import {
  asOption,
  configOrExit,
  databasePathOrExit,
  loggerFor,
  principalFlag,
  refuseRemoteDaemon,
  refuseServedBroker,
  withConfigOptions,
  type CommonFlags,
} from './options.js';
import { reachDaemon } from './via-daemon.js';

export function registerMcp(program: Command): void {
  withConfigOptions(program.command('mcp'))
    .description('serve the host tools over MCP on stdin/stdout (for Jan Desktop, Claude Desktop, any MCP client)')
    .addOption(asOption('who the MCP client acts as (default: cli:<your user>, an owner)'))
    .option('--role <role>', 'a role of the principal (repeat for more; default: its stored roles)', collect)
    .option('--setup', 'also offer an owner the tools that arrange the home (areas, names, aliases, exposure), for an agent helping set up')
    .addHelpText(
      'after',
      '\nstdout carries the protocol only; logs go to stderr (--log-level, default warn).\n' +
        'With `hearth start` running for the same database, the session is served by that daemon; without one it runs on its own.\n' +
        'Example client config: {"command": "node", "args": ["/path/to/hearth/dist/cli/main.js", "mcp"], "env": {"HEARTH_DATABASE_PATH": "/path/to/hearth.db"}}',
    )
    .action(async (flags: CommonFlags & { role?: string[]; setup?: boolean }, cmd: Command) => {
      const { as, fromEnv } = principalFlag(cmd);
      const { checkAs, cliPrincipal } = await import('./principal.js');
      checkAs(as, fromEnv);
      const client = await reachDaemon(await databasePathOrExit(flags), flags);
      if (client) return relay(client, { as, role: flags.role, setup: flags.setup }, fromEnv);
      const loaded = await configOrExit(flags);
      await refuseServedBroker(loaded.config.database.path, (await import('../bridge.js')).brokerUrl(loaded.config));
      const { Hearth } = await import('../hearth.js');
      const { serveStdio } = await import('../mcp/stdio.js');
      const log = await loggerFor(loaded, flags.logLevel ?? 'warn');
      const hearth = await Hearth.open({ config: loaded.config, log, connectWaitMs: 5000, announce: false });
      // Edited device files reach the client as tools/list_changed.
      if (loaded.config.devices.watch) hearth.bridge.watchDevices();
      try {
        await refuseRemoteDaemon(hearth.bridge);
      } catch (err) {
        await hearth.close();
        throw err;
      }
      const principal = cliPrincipal(hearth, as, flags.role);
      // Roles are looked up at each request, so `hearth policy` changes apply without a restart.
      const who = () => (as && !flags.role ? cliPrincipal(hearth, as) : principal);
      if (hearth.bridge.connection.connected) await hearth.bridge.settle(1500);
      else log.warn(`MQTT broker not reachable: is \`${hearthCommand()} start\` running? Tools are listed; calls fail until the broker is back`);
      const serving = await serveStdio({ hearth, principal: who, log: log.child({ part: 'mcp' }), setup: flags.setup });
      log.info({ principal: principal.id, roles: principal.roles, tools: hearth.tools.forPrincipal(principal).length }, 'MCP server on stdio');
      let stopping = false;
      const stop = async (why: string) => {
        if (stopping) return;
        stopping = true;
        log.debug({ why }, 'MCP server stopping');
        await serving.close();
        await hearth.close();
        process.exit(0);
      };
      process.once('SIGINT', () => void stop('SIGINT'));
      process.once('SIGTERM', () => void stop('SIGTERM'));
      void serving.closed.then(() => stop('client closed stdin'));
    });
}

/** The daemon serves the MCP session; this process only carries stdin and stdout over its socket. */
async function relay(client: ControlClient, params: { as?: string; role?: string[]; setup?: boolean }, asFromEnv: boolean): Promise<void> {
  let stream: Awaited<ReturnType<ControlClient['stream']>>;
  try {
    stream = await client.stream('mcp', {
      ...(params.as ? { as: params.as } : {}),
      ...(params.role ? { role: params.role } : {}),
      ...(params.setup ? { setup: true } : {}),
    });
  } catch (err) {
    client.close();
    throw new CliFailure(`${(err as Error).message}${params.as && asFromEnv ? ' (from HEARTH_PRINCIPAL)' : ''}`);
  }
  const { socket, leftover } = stream;
  if (leftover) process.stdout.write(leftover);
  process.stdin.pipe(socket);
  socket.pipe(process.stdout);
  const done = () => process.exit(0);
  socket.once('close', done);
  socket.once('error', done);
  process.stdin.once('end', () => socket.end());
}
