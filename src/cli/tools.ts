// `hearth tools`: the tool set as a model receives it.
import type { Command } from 'commander';
import type { CommandOutput } from '../daemon/protocol.js';
import type { Hearth } from '../hearth.js';
import { configOrExit, databasePathOrExit, loggerFor, withConfigOptions, type CommonFlags } from './options.js';
import { answer } from './via-daemon.js';

export interface ToolsParams {
  json?: boolean;
  stats?: boolean;
  as?: string;
}

export function registerTools(program: Command): void {
  withConfigOptions(program.command('tools'))
    .description('print the host tools generated from the devices (names, capability, description)')
    .option('--json', 'print the full specs exactly as a model receives them (OpenAI function format, host__ prefix)')
    .option('--stats', 'print the size of the tool set in estimated tokens, for both shapes')
    .option('--as <principal>', 'only the tools this principal may use (e.g. chat:alice)')
    .action(async (flags: CommonFlags & ToolsParams) => {
      const params: ToolsParams = { json: flags.json, stats: flags.stats, as: flags.as };
      await answer(await databasePathOrExit(flags), flags, 'tools', { ...params }, async () => {
        const loaded = await configOrExit(flags);
        const { Hearth } = await import('../hearth.js');
        const log = await loggerFor(loaded, flags.logLevel ?? 'warn');
        // Tools come from the device files; no broker is needed to list them.
        const hearth = await Hearth.open({ config: loaded.config, log, connect: false });
        try {
          return await toolsOutput(hearth, params);
        } finally {
          await hearth.close();
        }
      });
    });
}

/** What `hearth tools` prints, from a Hearth (the daemon's or the command's own). */
export async function toolsOutput(hearth: Hearth, params: ToolsParams): Promise<CommandOutput> {
  const { estimateTokens, toolSpecs } = await import('../tools/generator.js');
  const { cliPrincipal } = await import('./principal.js');
  const { table } = await import('./format.js');
  const principal = cliPrincipal(hearth, params.as);
  const tools = params.as ? hearth.tools.forPrincipal(principal) : hearth.tools.all();
  if (params.json) return { stdout: `${JSON.stringify(toolSpecs(tools), null, 2)}\n` };
  if (params.stats) {
    const lines = [`${hearth.bridge.registry.entities().length} entities; shape in use: ${hearth.tools.shape}`];
    for (const shape of ['per-entity', 'grouped'] as const) {
      const set = hearth.toolsInShape(shape);
      lines.push(`${shape.padEnd(10)}  ${String(set.length).padStart(4)} tools  ~${estimateTokens(toolSpecs(set))} tokens (characters/4 of the JSON specs)`);
    }
    return { stdout: `${lines.join('\n')}\n` };
  }
  const rows = [['TOOL', 'CAPABILITY', 'DESCRIPTION']];
  for (const t of tools) rows.push([t.name, t.capability, t.description.split('. ')[0].slice(0, 100)]);
  return { stdout: `${tools.length} tools (${hearth.tools.shape})\n\n${table(rows)}\n` };
}
