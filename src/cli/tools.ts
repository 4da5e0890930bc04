// `hearth tools`: the tool set as a model receives it.
import type { Command } from 'commander';
import { Hearth } from '../hearth.js';
import { estimateTokens, toolSpecs } from '../tools/generator.js';
import { cliPrincipal } from './principal.js';
import { configOrExit, loggerFor, withConfigOptions, type CommonFlags } from './options.js';
import { table } from './format.js';

export function registerTools(program: Command): void {
  withConfigOptions(program.command('tools'))
    .description('print the host tools generated from the devices (names, capability, description)')
    .option('--json', 'print the full specs exactly as a model receives them (OpenAI function format, host__ prefix)')
    .option('--stats', 'print the size of the tool set in estimated tokens, for both shapes')
    .option('--as <principal>', 'only the tools this principal may use (e.g. chat:alice)')
    .action(async (flags: CommonFlags & { json?: boolean; stats?: boolean; as?: string }) => {
      const loaded = configOrExit(flags);
      const log = loggerFor(loaded, flags.logLevel ?? 'warn');
      // Tools come from the device files; no broker is needed to list them.
      const hearth = await Hearth.open({ config: loaded.config, log, connect: false });
      try {
        const principal = cliPrincipal(hearth, flags.as);
        const tools = flags.as ? hearth.tools.forPrincipal(principal) : hearth.tools.all();
        if (flags.json) {
          process.stdout.write(`${JSON.stringify(toolSpecs(tools), null, 2)}\n`);
          return;
        }
        if (flags.stats) {
          const lines = [`${hearth.bridge.registry.entities().length} entities; shape in use: ${hearth.tools.shape}`];
          for (const shape of ['per-entity', 'grouped'] as const) {
            const set = hearth.toolsInShape(shape);
            lines.push(`${shape.padEnd(10)}  ${String(set.length).padStart(4)} tools  ~${estimateTokens(toolSpecs(set))} tokens (characters/4 of the JSON specs)`);
          }
          process.stdout.write(`${lines.join('\n')}\n`);
          return;
        }
        const rows = [['TOOL', 'CAPABILITY', 'DESCRIPTION']];
        for (const t of tools) rows.push([t.name, t.capability, t.description.split('. ')[0].slice(0, 100)]);
        process.stdout.write(`${tools.length} tools (${hearth.tools.shape})\n\n${table(rows)}\n`);
      } finally {
        await hearth.close();
      }
    });
}
