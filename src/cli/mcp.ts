// `hearth mcp`: the host tools as an MCP server on stdin/stdout, for Jan
// Desktop, Claude Desktop or any MCP client. Like `hearth call`, it connects
// to the configured broker (by default the embedded one of a running
// `hearth start`) and shares its database (policy, approvals, audit).
import type { Command } from 'commander';
import { Hearth } from '../hearth.js';
import { serveStdio } from '../mcp/stdio.js';
import { cliPrincipal } from './principal.js';
import { configOrExit, loggerFor, withConfigOptions, type CommonFlags } from './options.js';

export function registerMcp(program: Command): void {
  withConfigOptions(program.command('mcp'))
    .description('serve the host tools over MCP on stdin/stdout (for Jan Desktop, Claude Desktop, any MCP client)')
    .option('--as <principal>', 'who the MCP client acts as (default: env HEARTH_PRINCIPAL, else cli:<your user>, an owner)')
    .option('--role <roles...>', 'roles of the principal (default: its stored roles)')
    .addHelpText(
      'after',
      '\nstdout carries the protocol only; logs go to stderr (--log-level, default warn).\n' +
        'Run `hearth start` first: `hearth mcp` talks to its broker and database.\n' +
        'Example client config: {"command": "node", "args": ["/path/to/hearth/dist/cli/main.js", "mcp"], "env": {"HEARTH_DATABASE_PATH": "/path/to/hearth.db"}}',
    )
    .action(async (flags: CommonFlags & { as?: string; role?: string[] }) => {
      const loaded = await configOrExit(flags);
      const log = await loggerFor(loaded, flags.logLevel ?? 'warn');
      const as = flags.as ?? (process.env.HEARTH_PRINCIPAL?.trim() || undefined);
      const hearth = await Hearth.open({ config: loaded.config, log, connectWaitMs: 5000 });
      // Edited device files reach the client as tools/list_changed.
      if (loaded.config.devices.watch) hearth.bridge.watchDevices();
      let principal;
      try {
        principal = cliPrincipal(hearth, as, flags.role);
      } catch (err) {
        await hearth.close();
        process.stderr.write(`hearth: ${(err as Error).message}${flags.as ? '' : ' (from HEARTH_PRINCIPAL)'}\n`);
        process.exit(2);
      }
      // Roles are looked up at each request, so `hearth policy` changes apply without a restart.
      const who = () => (as && !flags.role ? cliPrincipal(hearth, as) : principal);
      if (hearth.bridge.connection.connected) await hearth.bridge.settle(1500);
      else log.warn('MQTT broker not reachable: is `hearth start` running? Tools are listed; calls fail until the broker is back');
      const serving = await serveStdio({ hearth, principal: who, log: log.child({ part: 'mcp' }) });
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
