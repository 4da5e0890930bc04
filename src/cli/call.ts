// `hearth call <tool> '<json args>' --as <principal>`: one call through the same pipeline as every front door.
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { CallAnswer } from '../daemon/schema.js';
import type { CallStatus } from '../present/outcome.js';
import { hearthCommand } from './command-name.js';
import { CliFailure, collect } from './failure.js';
import { configOrExit, databasePathOrExit, loggerFor, refuseRemoteDaemon, refuseServedBroker, withConfigOptions, type CommonFlags } from './options.js';
import { ask, printJson } from './via-daemon.js';

/**
 * `hearth call`'s exit code for what became of the call (docs/tools.md), so a script (cron, a Node-RED exec node)
 * can tell a held call from a refused one without reading words. 3 is `hearth start`'s (a port or the database).
 */
export const CALL_EXIT: Record<CallStatus, number> = {
  done: 0,
  failed: 1,
  invalid: 2,
  refused: 4,
  held: 5,
  unconfirmed: 6,
  partial: 6,
  not_sent: 7,
};
/** No tool by that name (the daemon's "not there"). */
export const UNKNOWN_TOOL_EXIT = 8;

const EXIT_HELP = `
Exit codes (also --json's "status"):
  0  done: confirmed by the device, or a read answered (printed on stdout)
  1  failed: the device reported a failure, or the call could not be made
  2  invalid arguments (not JSON, or not what the tool takes)
  4  refused by the policy (or by the transport's own check)
  5  held for approval: \`hearth approve <id>\`, then the same call again
  6  unconfirmed: sent, but the device did not report the new state in time
     (it may have taken effect); also a grouped call partly done
  7  not sent: the device is offline or the broker is not reachable
  8  no tool by that name
Every answer but "done" is printed on stderr; --json prints the answer on stdout whatever it is.`;

export function registerCall(program: Command): void {
  withConfigOptions(program.command('call'))
    .description('call one host tool through the handler pipeline (validation, policy, audit) and print the result')
    .argument('<tool>', 'tool name, as `hearth tools` lists it')
    .argument('[args]', 'arguments as JSON', '{}')
    .option('--as <principal>', 'who is calling (default: cli:<your user>, an owner)')
    .option('--role <role>', 'a role of the principal for this call (repeat for more; default: its stored roles)', collect)
    .option('--image-out <file>', 'save an image result to this file')
    .option('--json', "print the daemon's answer: status, text, error, details (audit id, outcome, ...) and images, as JSON")
    .addHelpText('after', EXIT_HELP)
    .action(async (toolName: string, rawArgs: string, flags: CommonFlags & { as?: string; role?: string[]; imageOut?: string; json?: boolean }) => {
      let args: Record<string, unknown>;
      try {
        args = JSON.parse(rawArgs) as Record<string, unknown>;
      } catch (err) {
        // The example names the tool asked for (a tool of this home), never one of the demo home's.
        const tool = /^[A-Za-z0-9_-]+$/.test(toolName) ? toolName : '<tool>';
        throw new CliFailure(`the arguments are not JSON: ${(err as Error).message}\n  example: ${hearthCommand()} call ${tool} '{"action":"turn_on"}'`);
      }
      if (!args || typeof args !== 'object' || Array.isArray(args)) {
        throw new CliFailure('the arguments must be a JSON object, e.g. \'{"action":"turn_on"}\'');
      }
      const params = { tool: toolName, args, as: flags.as, role: flags.role, image: !!flags.imageOut };
      const answer = await ask(await databasePathOrExit(flags), flags, 'call', params, async (checked) => {
        const loaded = await configOrExit(flags);
        const { brokerUrl } = await import('../bridge.js');
        await refuseServedBroker(loaded.config.database.path, brokerUrl(loaded.config));
        const { Hearth } = await import('../hearth.js');
        const { call } = await import('../daemon/methods/call.js');
        const log = await loggerFor(loaded, flags.logLevel ?? 'warn');
        // It publishes the command it was asked for, and nothing else (the birth message is the daemon's).
        const hearth = await Hearth.open({ config: loaded.config, log, connectWaitMs: 5000, announce: false });
        try {
          if (hearth.tools.get(toolName)) {
            // Let retained state arrive first, so the result can say what changed.
            if (hearth.bridge.connection.connected) {
              await refuseRemoteDaemon(hearth.bridge);
              await hearth.bridge.settle(1500);
            } else
              process.stderr.write(`hearth: cannot reach the broker at ${hearth.bridge.connection.options.url}: is \`${hearthCommand()} start\` running?\n`);
          }
          return await call(hearth, checked as never);
        } finally {
          await hearth.close();
        }
      }).catch(unknownTool);
      if (flags.imageOut && answer.image) writeFileSync(flags.imageOut, Buffer.from(answer.image.data, 'base64'));
      if (flags.json) printJson(answer);
      // Only a call that did what was asked answers on stdout: `x=$(hearth call ...)` never captures a refusal.
      else (answer.status === 'done' ? process.stdout : process.stderr).write(callText(answer, flags.imageOut));
      process.exitCode = CALL_EXIT[answer.status];
    });
}

/** The daemon's "not there" for a call is its tool: exit UNKNOWN_TOOL_EXIT, not a bad value's 2. */
async function unknownTool(err: unknown): Promise<never> {
  const { NOT_FOUND } = await import('../daemon/protocol.js');
  if (err instanceof CliFailure && err.controlCode === NOT_FOUND) throw new CliFailure(err.message, UNKNOWN_TOOL_EXIT, err.controlCode);
  throw err;
}

export function callText(a: CallAnswer, imageOut?: string, cmd = hearthCommand()): string {
  let text = a.text ?? '';
  // A held call's answer tells every door's caller to run `hearth approve <id>`: here, say it as this shell runs it.
  const id = a.details.approvalId;
  if (typeof id === 'string' && cmd !== 'hearth') text = text.split(`\`hearth approve ${id}\``).join(`\`${cmd} approve ${id}\``);
  let out = `${text}\n`;
  for (const img of a.images) {
    out += `[image ${img.mimeType}, ${Math.round(img.bytes / 1024)} KiB${imageOut ? ` saved to ${imageOut}` : '; --image-out <file> saves it'}]\n`;
  }
  return out;
}
