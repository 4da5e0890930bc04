// `hearth memory list|forget`: the project memory the builtin engine keeps
// (each completed turn's answer, per principal; recalled by that principal's
// later sessions). Only the database is opened: no broker, no device files.
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import type { MemoryEntry, MemoryStore } from '../agent/memory.js';
import type { CommandOutput } from '../daemon/protocol.js';
import { databasePathOrExit, withConfigOptions, type CommonFlags } from './options.js';
import { table } from './format.js';
import { CliFailure, failed, wholeNumber } from './failure.js';
import { answer } from './via-daemon.js';

/** Without a daemon: open the memory, or none when there is no database file yet (nothing remembered). */
async function withMemory(flags: CommonFlags, method: MemoryMethod, params: Record<string, unknown>): Promise<void> {
  const path = await databasePathOrExit(flags);
  await answer(path, flags, method, params, async () => {
    if (path !== ':memory:' && !existsSync(path)) return memoryOutput(undefined, method, params);
    const { openDatabase } = await import('../db/database.js');
    const { MemoryStore } = await import('../agent/memory.js');
    const db = openDatabase(path);
    try {
      return await memoryOutput(new MemoryStore(db), method, params);
    } finally {
      db.close();
    }
  });
}

export type MemoryMethod = 'memory.list' | 'memory.forget';
type Out = (s: string) => void;
type ListParams = { principal?: string; limit?: string; json?: boolean };
type ForgetParams = { principal?: string; id?: string; all?: boolean; json?: boolean };

/** What a memory command prints, on the daemon's database or on the one opened here. */
export async function memoryOutput(store: MemoryStore | undefined, method: MemoryMethod, params: Record<string, unknown>): Promise<CommandOutput> {
  let stdout = '';
  const out: Out = (s) => void (stdout += s);
  try {
    if (method === 'memory.list') await list(store, params as ListParams, out);
    else forget(store, params as ForgetParams, out);
    return { stdout };
  } catch (err) {
    return { ...failed(err), stdout };
  }
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

  withConfigOptions(memory.command('list', { isDefault: true }))
    .description('list remembered answers, newest first; what `hearth memory` alone does')
    .option('--principal <id>', 'only this principal (e.g. cli:alice)')
    .option('--limit <n>', 'at most this many (default 50)')
    .option('--json', 'print JSON (full entries)')
    .action((flags: CommonFlags & { principal?: string; limit?: string; json?: boolean }) =>
      withMemory(flags, 'memory.list', { principal: flags.principal, limit: flags.limit, json: flags.json }),
    );

  withConfigOptions(memory.command('forget'))
    .description("forget remembered answers: one (--id), a principal's (--principal), or all (--all)")
    .option('--principal <id>', "forget everything this principal's sessions answered")
    .option('--id <n>', 'forget one entry (its ID in `hearth memory list`)')
    .option('--all', 'forget everything')
    .option('--json', 'print JSON')
    .action((flags: CommonFlags & { principal?: string; id?: string; all?: boolean; json?: boolean }) =>
      withMemory(flags, 'memory.forget', { principal: flags.principal, id: flags.id, all: flags.all, json: flags.json }),
    );
}

async function list(store: MemoryStore | undefined, flags: ListParams, out: Out): Promise<void> {
  const { clip } = await import('../agent/memory.js');
  const principal = principalFlag(flags.principal);
  const limit = flags.limit === undefined ? 50 : wholeNumber('--limit', flags.limit, { min: 1, max: 100_000 });
  const entries: MemoryEntry[] = store ? store.list({ ...(principal !== undefined ? { principal } : {}), limit }) : [];
  if (flags.json) {
    out(`${JSON.stringify(entries, null, 2)}\n`);
    return;
  }
  if (!entries.length) {
    out(`nothing remembered${principal ? ` for ${principal}` : ''}\n`);
    return;
  }
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
  out(`${table(rows)}\n`);
}

function forget(store: MemoryStore | undefined, flags: ForgetParams, out: Out): void {
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
    out(`${JSON.stringify({ forgotten })}\n`);
    return;
  }
  const what = principal !== undefined ? ` of ${principal}` : id !== undefined ? ` (#${id})` : '';
  out(`forgot ${forgotten} ${forgotten === 1 ? 'entry' : 'entries'}${what}\n`);
}
