// `hearth memory list|forget`: the project memory the builtin engine keeps
// (each completed turn's answer, per principal; recalled by that principal's
// later sessions). Only the database is opened: no broker, no device files.
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { MemoryStore, clip, type MemoryEntry } from '../agent/memory.js';
import { openDatabase } from '../db/database.js';
import { configOrExit, withConfigOptions, type CommonFlags } from './options.js';
import { table } from './format.js';
import { CliFailure, guarded, wholeNumber } from './failure.js';

/** Open the memory, or undefined when there is no database file yet (nothing remembered). */
async function withMemory(flags: CommonFlags, body: (memory: MemoryStore | undefined, path: string) => void): Promise<void> {
  await guarded(async () => {
    const { config } = await configOrExit(flags);
    const path = config.database.path;
    if (path !== ':memory:' && !existsSync(path)) {
      body(undefined, path);
      return;
    }
    const db = openDatabase(path);
    try {
      body(new MemoryStore(db), path);
    } finally {
      db.close();
    }
  });
}

function principalFlag(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const p = raw.trim();
  if (!p || p.length > 200) throw new CliFailure(`--principal ${JSON.stringify(raw)}: give a principal id, e.g. cli:alice or chat:kitchen`);
  return p;
}

export function registerMemory(program: Command): void {
  const memory = program
    .command('memory')
    .description("the agent's project memory: what earlier conversations answered, recalled by the same principal's later sessions");

  withConfigOptions(memory.command('list'))
    .description('list remembered answers, newest first')
    .option('--principal <id>', 'only this principal (e.g. cli:alice)')
    .option('--limit <n>', 'at most this many (default 50)')
    .option('--json', 'print JSON (full entries)')
    .action((flags: CommonFlags & { principal?: string; limit?: string; json?: boolean }) =>
      withMemory(flags, (store) => {
        const principal = principalFlag(flags.principal);
        const limit = flags.limit === undefined ? 50 : wholeNumber('--limit', flags.limit, { min: 1, max: 100_000 });
        const entries: MemoryEntry[] = store ? store.list({ ...(principal !== undefined ? { principal } : {}), limit }) : [];
        if (flags.json) {
          process.stdout.write(`${JSON.stringify(entries, null, 2)}\n`);
          return;
        }
        if (!entries.length) {
          process.stdout.write(`nothing remembered${principal ? ` for ${principal}` : ''}\n`);
          return;
        }
        const rows = [['ID', 'WHEN', 'PRINCIPAL', 'SESSION', 'ASKED', 'ANSWER']];
        for (const e of entries) {
          rows.push([String(e.id), e.createdAt.slice(0, 19).replace('T', ' '), e.principal, e.sessionId ? clip(e.sessionId, 13) : '-', clip(e.prompt, 40) || '-', clip(e.text, 80)]);
        }
        process.stdout.write(`${table(rows)}\n`);
      }),
    );

  withConfigOptions(memory.command('forget'))
    .description('forget remembered answers: one (--id), a principal\'s (--principal), or all (--all)')
    .option('--principal <id>', "forget everything this principal's sessions answered")
    .option('--id <n>', 'forget one entry (its ID in `hearth memory list`)')
    .option('--all', 'forget everything')
    .option('--json', 'print JSON')
    .action((flags: CommonFlags & { principal?: string; id?: string; all?: boolean; json?: boolean }) =>
      withMemory(flags, (store) => {
        const chosen = [flags.principal !== undefined, flags.id !== undefined, !!flags.all].filter(Boolean).length;
        if (chosen !== 1) throw new CliFailure('say what to forget: exactly one of --principal <id>, --id <n> or --all');
        const principal = principalFlag(flags.principal);
        const id = flags.id === undefined ? undefined : wholeNumber('--id', flags.id, { min: 1 });
        let forgotten = 0;
        if (store) {
          if (principal !== undefined) forgotten = store.forgetPrincipal(principal);
          else if (id !== undefined) forgotten = store.forgetId(id);
          else forgotten = store.forgetAll();
        }
        if (id !== undefined && !forgotten) throw new CliFailure(`no memory entry ${id}; see hearth memory list`, 1);
        if (flags.json) {
          process.stdout.write(`${JSON.stringify({ forgotten })}\n`);
          return;
        }
        const what = principal !== undefined ? ` of ${principal}` : id !== undefined ? ` (#${id})` : '';
        process.stdout.write(`forgot ${forgotten} ${forgotten === 1 ? 'entry' : 'entries'}${what}\n`);
      }),
    );
}
