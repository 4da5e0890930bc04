// `hearth call <tool> '<json args>' --as <principal>`: one call through the same pipeline as every front door.
import type { Command } from 'commander';
import type { CommandOutput } from '../daemon/protocol.js';
import type { Hearth } from '../hearth.js';
import { CliFailure, collect } from './failure.js';
import { configOrExit, databasePathOrExit, loggerFor, refuseServedBroker, withConfigOptions, type CommonFlags } from './options.js';
import { answer } from './via-daemon.js';

export interface CallParams {
  tool: string;
  args: Record<string, unknown>;
  as?: string;
  role?: string[];
  json?: boolean;
  /** Only named in the text: the client saves the image itself. */
  imageOut?: string;
}

export function registerCall(program: Command): void {
  withConfigOptions(program.command('call'))
    .description('call one host tool through the handler pipeline (validation, policy, audit) and print the result')
    .argument('<tool>', 'tool name, as `hearth tools` lists it')
    .argument('[args]', 'arguments as JSON', '{}')
    .option('--as <principal>', 'who is calling (default: cli:<your user>, an owner)')
    .option('--role <role>', 'a role of the principal for this call (repeat for more; default: its stored roles)', collect)
    .option('--image-out <file>', 'save an image result to this file')
    .option('--json', 'print the whole result as JSON (details included)')
    .action(async (toolName: string, rawArgs: string, flags: CommonFlags & { as?: string; role?: string[]; imageOut?: string; json?: boolean }) => {
      let args: Record<string, unknown>;
      try {
        args = JSON.parse(rawArgs) as Record<string, unknown>;
      } catch (err) {
        throw new CliFailure(`the arguments are not JSON: ${(err as Error).message}\n  example: hearth call living_room_lamp '{"action":"turn_on"}'`);
      }
      if (!args || typeof args !== 'object' || Array.isArray(args)) {
        throw new CliFailure('the arguments must be a JSON object, e.g. \'{"action":"turn_on"}\'');
      }
      const params: CallParams = { tool: toolName, args, as: flags.as, role: flags.role, json: flags.json, imageOut: flags.imageOut };
      await answer(
        await databasePathOrExit(flags),
        flags,
        'call',
        { ...params },
        async () => {
          const loaded = await configOrExit(flags);
          const { brokerUrl } = await import('../bridge.js');
          await refuseServedBroker(loaded.config.database.path, brokerUrl(loaded.config));
          const { Hearth } = await import('../hearth.js');
          const log = await loggerFor(loaded, flags.logLevel ?? 'warn');
          // It publishes the command it was asked for, and nothing else (the birth message is the daemon's).
          const hearth = await Hearth.open({ config: loaded.config, log, connectWaitMs: 5000, announce: false });
          try {
            let stderr = '';
            if (hearth.tools.get(toolName)) {
              // Let retained state arrive first, so the result can say what changed.
              if (hearth.bridge.connection.connected) await hearth.bridge.settle(1500);
              else stderr = `hearth: cannot reach the broker at ${hearth.bridge.connection.options.url}: is \`hearth start\` running?\n`;
            }
            const out = await callOutput(hearth, params);
            return { ...out, stderr: stderr + (out.stderr ?? '') };
          } finally {
            await hearth.close();
          }
        },
        { imageOut: flags.imageOut },
      );
    });
}

/** One call and what `hearth call` prints about it, from a Hearth (the daemon's or the command's own). */
export async function callOutput(hearth: Hearth, params: CallParams): Promise<CommandOutput> {
  const { cliPrincipal } = await import('./principal.js');
  const principal = cliPrincipal(hearth, params.as, params.role);
  if (!hearth.tools.get(params.tool)) {
    return {
      stdout: '',
      stderr: `hearth: no tool ${JSON.stringify(params.tool)}; known: ${hearth.tools
        .all()
        .map((t) => t.name)
        .join(', ')}\n`,
      exitCode: 2,
    };
  }
  const result = await hearth.tools.call(params.tool, params.args, principal);
  const image = result.images?.[0] ? result.images[0].url.split(',')[1] : undefined;
  let stdout: string;
  if (params.json) {
    stdout = `${JSON.stringify({ ...result, images: result.images?.map((i) => ({ mimeType: i.mimeType, bytes: i.bytes })) }, null, 2)}\n`;
  } else {
    stdout = `${result.text ?? ''}\n`;
    for (const img of result.images ?? []) {
      stdout += `[image ${img.mimeType}, ${Math.round(img.bytes / 1024)} KiB${params.imageOut ? ` saved to ${params.imageOut}` : '; --image-out <file> saves it'}]\n`;
    }
  }
  return { stdout, exitCode: result.isError ? 1 : 0, ...(image && params.imageOut ? { image } : {}) };
}
