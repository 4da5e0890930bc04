// `hearth approvals`, `hearth approve <id>`, `hearth deny <id>`: the calls a
// `confirm` rule holds until a person says yes. An approval is bound to one
// exact call (principal, tool, arguments); once granted, the caller makes the
// same call again and it goes through, once.
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import type { SqliteApprovals } from '../policy/approvals.js';
import { configOrExit, databasePathOrExit, withConfigOptions, type CommonFlags } from './options.js';
import { CliFailure } from './failure.js';
import { ask, printJson } from './via-daemon.js';

/** Without a daemon: open the database's approvals for one command, with the audit log a refusal is written to. */
async function withApprovals<T>(flags: CommonFlags, path: string, body: (approvals: SqliteApprovals) => T): Promise<T> {
  if (path !== ':memory:' && !existsSync(path)) {
    throw new CliFailure(`no database at ${path}: no approvals have been requested there (pass --db <file> to use the bridge's database)`, 1);
  }
  const { config } = await configOrExit(flags);
  const [{ openDatabase }, { SqliteApprovals }, { SqliteAuditLog }, { loadAuditKey, sequenceFileOf }] = await Promise.all([
    import('../db/database.js'),
    import('../policy/approvals.js'),
    import('../audit/store.js'),
    import('../audit/key.js'),
  ]);
  const db = openDatabase(path);
  // A refusal is an audit row: written here as the bridge writes its rows (digest, key).
  const keyFile = config.audit.keyFile;
  const key = keyFile ? loadAuditKey(keyFile).key : undefined;
  const audit = new SqliteAuditLog(db, {
    digestFile: config.audit.digestFile,
    durability: config.audit.durability,
    ...(key && keyFile ? { key, sequenceFile: sequenceFileOf(keyFile) } : {}),
  });
  try {
    return body(new SqliteApprovals(db, { audit }));
  } finally {
    await audit.close();
    db.close();
  }
}

async function decide(verb: 'approve' | 'deny', id: string, flags: CommonFlags & { by?: string }): Promise<void> {
  const path = await databasePathOrExit(flags);
  const { decide } = await import('../daemon/methods/approvals.js');
  const { inWords } = await import('../present/duration.js');
  const a = await ask(path, flags, verb, { id, by: flags.by }, (p) => withApprovals(flags, path, (store) => decide(store, verb, p as { id: string })), {
    id: '<id>',
  });
  const x = a.approval;
  const call = `${x.principal}: ${x.tool} ${JSON.stringify(x.args)}`;
  process.stdout.write(
    a.decision === 'approved'
      ? `approved ${x.id} (${call}) as ${a.by}; it goes through when ${x.principal} makes the same call again within ${inWords(x.expiresInMs ?? 0)}\n`
      : `denied ${x.id} (${call}) as ${a.by}\n`,
  );
}

export function registerApprovals(program: Command): void {
  withConfigOptions(program.command('approvals'))
    .description('calls waiting for a person to approve them (held by `confirm` rules: unlocking, opening the garage, ...)')
    .option('--all', 'also granted, denied, used and expired ones (the latest 100)')
    .option('--json', "print the daemon's answer (the approvals) as JSON")
    .action(async (flags: CommonFlags & { all?: boolean; json?: boolean }) => {
      const path = await databasePathOrExit(flags);
      const { approvals } = await import('../daemon/methods/approvals.js');
      const list = await ask(path, flags, 'approvals', { all: flags.all }, (p) => withApprovals(flags, path, (store) => approvals(store, p)));
      if (flags.json) return printJson(list);
      if (!list.length) return void process.stdout.write(flags.all ? 'no approvals have been requested\n' : 'no approvals are pending\n');
      const { table } = await import('./format.js');
      const { approvalStatusWords } = await import('../present/approval.js');
      const { inWords } = await import('../present/duration.js');
      const rows = [['ID', 'PRINCIPAL', 'TOOL', 'ARGS', ...(flags.all ? ['STATUS'] : []), flags.all ? 'STATE' : 'EXPIRES IN', 'REASON']];
      for (const a of list) {
        const args = JSON.stringify(a.args);
        rows.push([
          a.id,
          a.principal,
          a.tool,
          args.length > 60 ? `${args.slice(0, 59)}…` : args,
          ...(flags.all ? [a.status] : []),
          flags.all ? approvalStatusWords(a) : inWords(a.expiresInMs ?? 0),
          a.reason,
        ]);
      }
      const { hearthCommand } = await import('./command-name.js');
      const cmd = hearthCommand();
      const tip = flags.all ? '' : `\ngrant one: ${cmd} approve <id>   refuse it: ${cmd} deny <id>\n`;
      process.stdout.write(`${table(rows)}\n${tip}`);
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
