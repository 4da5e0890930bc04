// `hearth call <tool> '<json args>' --as <principal>`: one call through the same pipeline as every front door.
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { CallAnswer } from '../daemon/schema.js';
import { hearthCommand } from './command-name.js';
import { CliFailure, collect } from './failure.js';
import { configOrExit, databasePathOrExit, loggerFor, refuseRemoteDaemon, refuseServedBroker, withConfigOptions, type CommonFlags } from './options.js';
import { ask, printJson } from './via-daemon.js';

export function registerCall(program: Command): void {
  withConfigOptions(program.command('call'))
    .description('call one host tool through the handler pipeline (validation, policy, audit) and print the result')
    .argument('<tool>', 'tool name, as `hearth tools` lists it')
    .argument('[args]', 'arguments as JSON', '{}')
    .option('--as <principal>', 'who is calling (default: cli:<your user>, an owner)')
    .option('--role <role>', 'a role of the principal for this call (repeat for more; default: its stored roles)', collect)
    .option('--image-out <file>', 'save an image result to this file')
    .option('--json', "print the daemon's answer: text, error, details (audit id, outcome, ...) and images, as JSON")
    .action(async (toolName: string, rawArgs: string, flags: CommonFlags & { as?: string; role?: string[]; imageOut?: string; json?: boolean }) => {
      let args: Record<string, unknown>;
      try {
        args = JSON.parse(rawArgs) as Record<string, unknown>;
      } catch (err) {
        throw new CliFailure(
          `the arguments are not JSON: ${(err as Error).message}\n  example: ${hearthCommand()} call living_room_lamp '{"action":"turn_on"}'`,
        );
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
      });
      if (flags.imageOut && answer.image) writeFileSync(flags.imageOut, Buffer.from(answer.image.data, 'base64'));
      if (flags.json) printJson(answer);
      else process.stdout.write(callText(answer, flags.imageOut));
      if (answer.isError) process.exitCode = 1;
    });
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
