// `hearth agent rpc`: Hearth's agent over the Jan kit's runtime protocol v1 on
// stdin/stdout (newline-delimited JSON-RPC 2.0), exactly where a kit client
// expects `jan cli agent rpc`. Every session gets this principal's home tools
// plus the tools the client declares (those run in the client, via
// item/tool_request and tool/respond). stdout carries the protocol only; logs
// go to stderr.
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { createEngine } from '../agent/factory.js';
import { RpcServer } from '../agent/rpc/server.js';
import { PACKAGE_ROOT } from '../bridge.js';
import { Hearth } from '../hearth.js';
import { cliPrincipal } from './principal.js';
import type { Principal } from '../tools/types.js';
import { CliFailure, collect } from './failure.js';
import { asOption, configOrExit, loggerFor, principalFlag, withConfigOptions, type CommonFlags } from './options.js';
import { errorOf } from '../util/error.js';

type Flags = CommonFlags & { role?: string[] };

export function registerAgentRpc(program: Command): void {
  const agent =
    program.commands.find((c) => c.name() === 'agent') ??
    program.command('agent').description("Hearth's agent for other programs (the Jan kit's runtime protocol)");
  withConfigOptions(agent.command('rpc'))
    .description(
      "serve the agent on stdin/stdout with the Jan kit's runtime protocol v1 (what `jan cli agent rpc` speaks); " +
        "sessions get the principal's home tools plus the client's own tools",
    )
    .addOption(asOption('who the sessions act for (default: cli:<your user>, an owner)'))
    .option('--role <role>', 'a role of that principal (repeat for more; default: its stored roles)', collect)
    .action(async (flags: Flags, cmd: Command) => {
      // Nothing but the protocol may reach stdout.
      console.log = console.error;
      console.info = console.error;
      console.debug = console.error;
      const loaded = await configOrExit(flags);
      const log = await loggerFor(loaded, flags.logLevel ?? 'warn');
      const pkg = JSON.parse(readFileSync(`${PACKAGE_ROOT}/package.json`, 'utf8')) as { version: string };
      // Serve at once: a client must not wait for a broker that may be down. Home tools
      // report the broker as down (nothing sent) until the connection, retried in the background, is up.
      const hearth = await Hearth.open({ config: loaded.config, log, connectWaitMs: 0, announce: false });
      let engine: Awaited<ReturnType<typeof createEngine>> | undefined;
      try {
        if (!hearth.bridge.connection.connected) {
          log.warn({ url: hearth.bridge.connection.options.url }, 'not connected to the broker yet; home tools report it as down until it connects');
        }
        const { as, fromEnv } = principalFlag(cmd);
        let principal: Principal;
        try {
          principal = cliPrincipal(hearth, as, flags.role);
        } catch (err) {
          throw new CliFailure(fromEnv ? `HEARTH_PRINCIPAL ${(err as Error).message.replace(/^--as /, '')}` : (err as Error).message, 1);
        }
        engine = await createEngine(hearth);
        const server = new RpcServer({
          engine,
          input: process.stdin,
          output: process.stdout,
          version: pkg.version,
          principal,
          baseTools: () => hearth.tools.forPrincipal(principal),
          log: log.child({ part: 'rpc' }),
        });
        hearth.tools.on('changed', () => server.refreshBaseTools());
        const stop = () => void server.close();
        process.once('SIGTERM', stop);
        process.once('SIGINT', stop);
        process.stdout.on('error', stop);
        log.info({ principal: principal.id, engine: engine.name }, 'agent rpc: serving on stdin/stdout');
        await server.closed;
        process.off('SIGTERM', stop);
        process.off('SIGINT', stop);
      } finally {
        await engine?.close().catch((err: unknown) => log.warn({ err: errorOf(err) }, 'closing the engine failed'));
        await hearth.close();
      }
      // Let the last lines out, then leave (a reconnecting client or timer must not keep us).
      await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
      process.exit(process.exitCode ?? 0);
    });
}
