// `hearth call <tool> '<json args>' --as <principal>`: one call through the same pipeline as every front door.
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { Hearth } from '../hearth.js';
import { cliPrincipal } from './principal.js';
import { configOrExit, loggerFor, withConfigOptions, type CommonFlags } from './options.js';

export function registerCall(program: Command): void {
  withConfigOptions(program.command('call'))
    .description('call one host tool through the handler pipeline (validation, policy, audit) and print the result')
    .argument('<tool>', 'tool name, as `hearth tools` lists it')
    .argument('[args]', 'arguments as JSON', '{}')
    .option('--as <principal>', 'who is calling (default: cli:<your user>, an owner)')
    .option('--role <roles...>', 'roles of the principal for this call (default: its stored roles)')
    .option('--image-out <file>', 'save an image result to this file')
    .option('--json', 'print the whole result as JSON (details included)')
    .action(async (toolName: string, rawArgs: string, flags: CommonFlags & { as?: string; role?: string[]; imageOut?: string; json?: boolean }) => {
      let args: Record<string, unknown>;
      try {
        args = JSON.parse(rawArgs) as Record<string, unknown>;
      } catch (err) {
        process.stderr.write(`hearth: the arguments are not JSON: ${(err as Error).message}\n  example: hearth call living_room_lamp '{"action":"turn_on"}'\n`);
        process.exit(2);
      }
      if (!args || typeof args !== 'object' || Array.isArray(args)) {
        process.stderr.write('hearth: the arguments must be a JSON object, e.g. \'{"action":"turn_on"}\'\n');
        process.exit(2);
      }
      const loaded = configOrExit(flags);
      const log = loggerFor(loaded, flags.logLevel ?? 'warn');
      const hearth = await Hearth.open({ config: loaded.config, log, connectWaitMs: 5000 });
      try {
        const principal = cliPrincipal(hearth, flags.as, flags.role);
        if (!hearth.tools.get(toolName)) {
          process.stderr.write(`hearth: no tool ${JSON.stringify(toolName)}; known: ${hearth.tools.all().map((t) => t.name).join(', ')}\n`);
          process.exitCode = 2;
          return;
        }
        // Let retained state arrive first, so the result can say what changed.
        if (hearth.bridge.connection.connected) await hearth.bridge.settle(1500);
        else process.stderr.write(`hearth: cannot reach the broker at ${hearth.bridge.connection.options.url}: is \`hearth start\` running?\n`);
        const result = await hearth.tools.call(toolName, args, principal);
        if (flags.imageOut && result.images?.[0]) {
          writeFileSync(flags.imageOut, Buffer.from(result.images[0].url.split(',')[1], 'base64'));
        }
        if (flags.json) {
          process.stdout.write(`${JSON.stringify({ ...result, images: result.images?.map((i) => ({ mimeType: i.mimeType, bytes: i.bytes })) }, null, 2)}\n`);
        } else {
          process.stdout.write(`${result.text ?? ''}\n`);
          for (const img of result.images ?? []) {
            process.stdout.write(`[image ${img.mimeType}, ${Math.round(img.bytes / 1024)} KiB${flags.imageOut ? ` saved to ${flags.imageOut}` : '; --image-out <file> saves it'}]\n`);
          }
        }
        process.exitCode = result.isError ? 1 : 0;
      } finally {
        await hearth.close();
      }
    });
}
