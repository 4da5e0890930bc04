// `hearth tools`: the tool set as a model receives it.
import type { Command } from 'commander';
import type { Hearth } from '../hearth.js';
import { configOrExit, databasePathOrExit, loggerFor, withConfigOptions, type CommonFlags } from './options.js';
import { ask, printJson } from './via-daemon.js';

/** Tools come from the device files; no broker is needed to list them. */
async function ownHearth<T>(flags: CommonFlags, body: (hearth: Hearth) => T): Promise<Awaited<T>> {
  const loaded = await configOrExit(flags);
  const { Hearth } = await import('../hearth.js');
  const log = await loggerFor(loaded, flags.logLevel ?? 'warn');
  const hearth = await Hearth.open({ config: loaded.config, log, connect: false });
  try {
    return await body(hearth);
  } finally {
    await hearth.close();
  }
}

export function registerTools(program: Command): void {
  withConfigOptions(program.command('tools'))
    .description('print the host tools generated from the devices (names, capability, description)')
    .option('--json', "print the daemon's answer: each tool's name, capability, description and spec exactly as a model receives it")
    .option('--stats', 'print the size of the tool set in estimated tokens, for both shapes')
    .option('--as <principal>', 'only the tools this principal may use (e.g. chat:alice)')
    .action(async (flags: CommonFlags & { json?: boolean; stats?: boolean; as?: string }) => {
      const db = await databasePathOrExit(flags);
      const { tools, toolsStats } = await import('../daemon/methods/tools.js');
      const { table } = await import('./format.js');
      if (flags.stats) {
        const s = await ask(db, flags, 'tools.stats', {}, () => ownHearth(flags, toolsStats));
        if (flags.json) return printJson(s);
        const lines = [`${s.entities} entities; shape in use: ${s.shape}`];
        for (const x of s.shapes) {
          lines.push(`${x.shape.padEnd(10)}  ${String(x.tools).padStart(4)} tools  ~${x.tokens} tokens (characters/4 of the JSON specs)`);
        }
        process.stdout.write(`${lines.join('\n')}\n`);
        return;
      }
      const a = await ask(db, flags, 'tools', { as: flags.as }, (p) => ownHearth(flags, (h) => tools(h, p)));
      if (flags.json) return printJson(a);
      const rows = [['TOOL', 'CAPABILITY', 'DESCRIPTION']];
      for (const t of a.tools) rows.push([t.name, t.capability, t.description.split('. ')[0].slice(0, 100)]);
      process.stdout.write(`${a.tools.length} tools (${a.shape})\n\n${table(rows)}\n`);
    });
}
