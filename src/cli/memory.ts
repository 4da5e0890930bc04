// `hearth memory list|forget`: the project memory the builtin engine keeps
// (each completed turn's answer, per principal; recalled by that principal's
// later sessions). Only the database is opened: no broker, no device files.
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { clip, type MemoryStore } from '../agent/memory.js';
import type { Answers } from '../daemon/schema.js';
import { databasePathOrExit, withConfigOptions, type CommonFlags } from './options.js';
import { table } from './format.js';
import { CliFailure, wholeNumber } from './failure.js';
import { ask, printJson } from './via-daemon.js';

/** Ask the daemon, or run the method on the database here (none yet: nothing remembered). */
async function memory<M extends 'memory.list' | 'memory.forget'>(
  flags: CommonFlags,
  method: M,
  params: Record<string, unknown>,
  run: (store: MemoryStore | undefined, p: Record<string, unknown>) => Answers[M],
): Promise<Answers[M]> {
  const path = await databasePathOrExit(flags);
  return ask(path, flags, method, params, async (p) => {
    if (path !== ':memory:' && !existsSync(path)) return run(undefined, p);
    const { openDatabase } = await import('../db/database.js');
    const { MemoryStore } = await import('../agent/memory.js');
    const db = openDatabase(path);
    try {
      return run(new MemoryStore(db), p);
    } finally {
      db.close();
    }
  });
}

export function registerMemory(program: Command): void {
  const group = program
    .command('memory')
    .description("the agent's project memory: what earlier conversations answered, recalled by the same principal's later sessions");

  withConfigOptions(group.command('list', { isDefault: true }))
    .description('list remembered answers, newest first; what `hearth memory` alone does')
    .option('--principal <id>', 'only this principal (e.g. cli:alice)')
    .option('--limit <n>', 'at most this many (default 50)')
    .option('--json', "print the daemon's answer (full entries) as JSON")
    .action(async (flags: CommonFlags & { principal?: string; limit?: string; json?: boolean }) => {
      const limit = flags.limit === undefined ? undefined : wholeNumber('--limit', flags.limit, { min: 1, max: 100_000 });
      const { listMemory } = await import('../daemon/methods/memory.js');
      const entries = await memory(flags, 'memory.list', { principal: flags.principal, limit }, listMemory);
      if (flags.json) return printJson(entries);
      if (!entries.length) return void process.stdout.write(`nothing remembered${flags.principal ? ` for ${flags.principal.trim()}` : ''}\n`);
      const rows = [['ID', 'WHEN', 'PRINCIPAL', 'SESSION', 'ASKED', 'ANSWER']];
      for (const e of entries) {
        rows.push([
          String(e.id),
          e.createdAt.slice(0, 19).replace('T', ' '),
          e.principal,
          e.sessionId ? clip(e.sessionId, 13) : '-',
          clip(e.prompt, 40) || '-',
          clip(e.text, 80),
        ]);
      }
      process.stdout.write(`${table(rows)}\n`);
    });

  withConfigOptions(group.command('forget'))
    .description("forget remembered answers: one (--id), a principal's (--principal), or all (--all)")
    .option('--principal <id>', "forget everything this principal's sessions answered")
    .option('--id <n>', 'forget one entry (its ID in `hearth memory list`)')
    .option('--all', 'forget everything')
    .option('--json', "print the daemon's answer as JSON")
    .action(async (flags: CommonFlags & { principal?: string; id?: string; all?: boolean; json?: boolean }) => {
      const chosen = [flags.principal !== undefined, flags.id !== undefined, !!flags.all].filter(Boolean).length;
      if (chosen !== 1) throw new CliFailure('say what to forget: exactly one of --principal <id>, --id <n> or --all');
      const id = flags.id === undefined ? undefined : wholeNumber('--id', flags.id, { min: 1 });
      const { forgetMemory } = await import('../daemon/methods/memory.js');
      const { forgotten } = await memory(flags, 'memory.forget', { principal: flags.principal, id, all: flags.all }, forgetMemory);
      if (flags.json) return printJson({ forgotten });
      const what = flags.principal !== undefined ? ` of ${flags.principal.trim()}` : id !== undefined ? ` (#${id})` : '';
      process.stdout.write(`forgot ${forgotten} ${forgotten === 1 ? 'entry' : 'entries'}${what}\n`);
    });
}
