// `hearth approvals`, `hearth approve <id>`, `hearth deny <id>`: the calls a
// `confirm` rule holds until a person says yes. An approval is bound to one
// exact call (principal, tool, arguments); once granted, the caller makes the
// same call again and it goes through, once.
import { existsSync } from 'node:fs';
import { userInfo } from 'node:os';
import type { Command } from 'commander';
import type { CommandOutput } from '../daemon/protocol.js';
import type { Db } from '../db/database.js';
import type { Approval, SqliteApprovals } from '../policy/approvals.js';
import { configOrExit, databasePathOrExit, withConfigOptions, type CommonFlags } from './options.js';
import { CliFailure, failed } from './failure.js';
import { answer } from './via-daemon.js';

/** `cli:<os user>`, as `hearth call` names the person at this terminal. */
export function cliUser(): string {
  let name = 'local';
  try {
    name = userInfo().username || 'local';
  } catch {
    // no passwd entry (containers)
  }
  return `cli:${name.replace(/[^A-Za-z0-9_.@-]/g, '_')}`;
}

/** `4 min 10 s`, `45 s`, `2 h 5 min`. */
export function inWords(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min${s % 60 ? ` ${s % 60} s` : ''}`;
  const h = Math.floor(m / 60);
  return `${h} h${m % 60 ? ` ${m % 60} min` : ''}`;
}

/** Without a daemon: open the database's approvals for one command, with the audit log a refusal is written to. */
async function withApprovals(flags: CommonFlags, path: string, body: (approvals: SqliteApprovals, db: Db) => Promise<CommandOutput>): Promise<CommandOutput> {
  if (path !== ':memory:' && !existsSync(path)) {
    return failed(new CliFailure(`no database at ${path}: no approvals have been requested there (pass --db <file> to use the bridge's database)`, 1));
  }
  const { config } = await configOrExit(flags);
  const [{ openDatabase }, { SqliteApprovals }, { SqliteAuditLog }, { loadAuditKey }] = await Promise.all([
    import('../db/database.js'),
    import('../policy/approvals.js'),
    import('../audit/store.js'),
    import('../audit/key.js'),
  ]);
  const db = openDatabase(path);
  // A refusal is an audit row: written here as the bridge writes its rows (digest, key).
  const key = config.audit.keyFile ? loadAuditKey(config.audit.keyFile).key : undefined;
  const audit = new SqliteAuditLog(db, { digestFile: config.audit.digestFile, durability: config.audit.durability, ...(key ? { key } : {}) });
  try {
    return await body(new SqliteApprovals(db, { audit }), db);
  } finally {
    await audit.close();
    db.close();
  }
}

function argsText(a: Approval): string {
  const s = JSON.stringify(a.args);
  return s.length > 60 ? `${s.slice(0, 59)}…` : s;
}

function statusText(a: Approval, now: number): string {
  switch (a.status) {
    case 'pending':
      return `expires in ${inWords(a.expiresAt - now)}`;
    case 'granted':
      return `granted by ${a.decidedBy ?? '?'}; usable for ${inWords(a.expiresAt - now)}`;
    case 'denied':
      return `denied by ${a.decidedBy ?? '?'}`;
    case 'used':
      return `granted by ${a.decidedBy ?? '?'}, used ${a.usedAt ? new Date(a.usedAt).toISOString() : ''}`;
    case 'expired':
      return `expired ${new Date(a.expiresAt).toISOString()}`;
  }
}

function checkId(raw: string): string {
  const id = raw.trim();
  if (!/^[0-9a-f]{6,64}$/i.test(id)) throw new CliFailure(`<id> ${JSON.stringify(raw)}: an approval id looks like 3f9a1c2b7e44 (see hearth approvals)`);
  return id.toLowerCase();
}

function checkBy(raw: string | undefined): string {
  if (raw === undefined) return cliUser();
  const by = raw.trim();
  if (!by || by.length > 100 || /[\u0000-\u001f]/.test(by))
    throw new CliFailure(`--by ${JSON.stringify(raw)}: must be a name of 1 to 100 printable characters`);
  return by;
}

export interface DecideParams {
  verb: 'approve' | 'deny';
  id: string;
  by?: string;
}

/** `hearth approve` / `hearth deny`: decide one pending approval; what the command prints. */
export async function decideOutput(approvals: SqliteApprovals, params: DecideParams): Promise<CommandOutput> {
  try {
    const { notDecidableText } = await import('../policy/approvals.js');
    const { verb } = params;
    const id = checkId(params.id);
    const by = checkBy(params.by);
    const before = approvals.get(id);
    if (!before) throw new CliFailure(`no approval ${id}; pending ones: hearth approvals`, 1);
    if (before.status !== 'pending') throw new CliFailure(notDecidableText(before), 1);
    const ok = verb === 'approve' ? approvals.grant(id, by) : approvals.deny(id, by);
    const after = approvals.get(id)!;
    if (!ok) throw new CliFailure(notDecidableText(after), 1);
    const call = `${after.principal}: ${after.tool} ${JSON.stringify(after.args)}`;
    return {
      stdout:
        verb === 'approve'
          ? `approved ${id} (${call}) as ${by}; it goes through when ${after.principal} makes the same call again within ${inWords(after.expiresAt - Date.now())}\n`
          : `denied ${id} (${call}) as ${by}\n`,
    };
  } catch (err) {
    return failed(err);
  }
}

export interface ApprovalsParams {
  all?: boolean;
  json?: boolean;
}

/** `hearth approvals`: what the command prints. */
export async function approvalsOutput(approvals: SqliteApprovals, params: ApprovalsParams): Promise<CommandOutput> {
  const { approvalJson } = await import('../policy/approvals.js');
  const { table } = await import('./format.js');
  const now = Date.now();
  const list = approvals.list(params.all ? {} : { status: 'pending' });
  if (params.json)
    return {
      stdout: `${JSON.stringify(
        list.map((a) => approvalJson(a, now)),
        null,
        2,
      )}\n`,
    };
  if (!list.length) return { stdout: params.all ? 'no approvals have been requested\n' : 'no approvals are pending\n' };
  const rows = [['ID', 'PRINCIPAL', 'TOOL', 'ARGS', ...(params.all ? ['STATUS'] : []), params.all ? 'STATE' : 'EXPIRES IN', 'REASON']];
  for (const a of list) {
    rows.push([
      a.id,
      a.principal,
      a.tool,
      argsText(a),
      ...(params.all ? [a.status] : []),
      params.all ? statusText(a, now) : inWords(a.expiresAt - now),
      a.reason,
    ]);
  }
  const tip = params.all ? '' : '\ngrant one: hearth approve <id>   refuse it: hearth deny <id>\n';
  return { stdout: `${table(rows)}\n${tip}` };
}

async function decide(verb: 'approve' | 'deny', id: string, flags: CommonFlags & { by?: string }): Promise<void> {
  const path = await databasePathOrExit(flags);
  const params: DecideParams = { verb, id, by: flags.by };
  await answer(path, flags, verb, { ...params }, () => withApprovals(flags, path, (approvals) => decideOutput(approvals, params)));
}

export function registerApprovals(program: Command): void {
  withConfigOptions(program.command('approvals'))
    .description('calls waiting for a person to approve them (held by `confirm` rules: unlocking, opening the garage, ...)')
    .option('--all', 'also granted, denied, used and expired ones (the latest 100)')
    .option('--json', 'print JSON')
    .action(async (flags: CommonFlags & ApprovalsParams) => {
      const path = await databasePathOrExit(flags);
      const params: ApprovalsParams = { all: flags.all, json: flags.json };
      await answer(path, flags, 'approvals', { ...params }, () => withApprovals(flags, path, (approvals) => approvalsOutput(approvals, params)));
    });

  withConfigOptions(program.command('approve'))
    .description('grant a pending approval: the caller then makes the same call again and it goes through (once)')
    .argument('<id>', 'approval id, as `hearth approvals` lists it')
    .option('--by <name>', 'who grants it, for the record (default: cli:<your user>)')
    .action((id: string, flags: CommonFlags & { by?: string }) => decide('approve', id, flags));

  withConfigOptions(program.command('deny'))
    .description('refuse a pending approval')
    .argument('<id>', 'approval id, as `hearth approvals` lists it')
    .option('--by <name>', 'who refuses it, for the record (default: cli:<your user>)')
    .action((id: string, flags: CommonFlags & { by?: string }) => decide('deny', id, flags));
}
