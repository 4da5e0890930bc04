// `hearth token create|list|revoke`: bearer tokens for the HTTP API (and MCP).
// A token names a principal (default http:<name>); its roles live in the
// policy table, beside every other principal's. The secret is printed once.
import type { Command } from 'commander';
import type { TokenContext } from '../daemon/methods/tokens.js';
import type { Answers } from '../daemon/schema.js';
import { databasePathOrExit, withConfigOptions, type CommonFlags } from './options.js';
import { hearthCommand } from './command-name.js';
import { table } from './format.js';
import { collect } from './failure.js';
import { ask, printJson } from './via-daemon.js';

type TokenMethod = 'token.create' | 'token.list' | 'token.revoke';

/** Ask the daemon, or run the method on the database opened here. */
async function tokens<M extends TokenMethod>(
  flags: CommonFlags,
  method: M,
  params: Record<string, unknown>,
  run: (ctx: TokenContext, p: Record<string, unknown>) => Answers[M],
): Promise<Answers[M]> {
  const path = await databasePathOrExit(flags);
  return ask(
    path,
    flags,
    method,
    params,
    async (p) => {
      const { openDatabase } = await import('../db/database.js');
      const { TokenStore } = await import('../auth/tokens.js');
      const { SqlitePolicy } = await import('../policy/engine.js');
      const db = openDatabase(path);
      try {
        return run({ tokens: new TokenStore(db), policy: new SqlitePolicy(db), db }, p);
      } finally {
        db.close();
      }
    },
    { name: '<name>' },
  );
}

export function registerToken(program: Command): void {
  const token = program.command('token').description('bearer tokens for the HTTP API: create (the secret is shown once), list, revoke');

  withConfigOptions(token.command('create'))
    .description('create a token; prints its secret once')
    .argument('<name>', 'a name for the token (letters, digits, _ . -), e.g. kitchen-tablet')
    .option('--role <role>', 'a role of its principal, stored in the policy table, e.g. owner (repeat for more)', collect)
    .option('--principal <id>', 'the principal it acts as (default http:<name>), e.g. http:alice or voice:kitchen')
    .option('--area <area>', 'where the device holding it speaks from (e.g. Kitchen): "in here" means it, and policy rules may name it (--from-area)')
    .option('--json', "print the daemon's answer (the token, its secret included) as JSON")
    .action(async (name: string, flags: CommonFlags & { role?: string[]; principal?: string; area?: string; json?: boolean }) => {
      const { createToken } = await import('../daemon/methods/tokens.js');
      const t = await tokens(flags, 'token.create', { name, role: flags.role, principal: flags.principal, area: flags.area }, (ctx, p) =>
        createToken(ctx, p as { name: string }),
      );
      if (flags.json) return printJson(t);
      process.stdout.write(
        `created token ${t.name} for ${t.principal} (roles: ${t.roles.length ? t.roles.join(', ') : 'none'}${t.area ? `; area ${t.area}` : ''})\n\n` +
          `  ${t.secret}\n\n` +
          'This secret is not shown again: copy it now. Send it as `Authorization: Bearer <secret>`.\n' +
          (t.roles.length ? '' : `Note: ${t.principal} has no roles, so the policy lets it act on nothing; give it some with --role (e.g. --role owner).\n`),
      );
    });

  withConfigOptions(token.command('list', { isDefault: true }))
    .description('list tokens (never their secrets); what `hearth token` alone does')
    .option('--json', "print the daemon's answer (the tokens) as JSON")
    .action(async (flags: CommonFlags & { json?: boolean }) => {
      const { listTokens } = await import('../daemon/methods/tokens.js');
      const list = await tokens(flags, 'token.list', {}, (ctx) => listTokens(ctx));
      if (flags.json) return printJson(list);
      if (!list.length) return void process.stdout.write(`no tokens; create one: ${hearthCommand()} token create <name> --role owner\n`);
      const rows = [['NAME', 'PRINCIPAL', 'ROLES', 'AREA', 'CREATED', 'LAST USED', 'STATUS']];
      for (const t of list) {
        rows.push([
          t.name,
          t.principal,
          t.roles.join(',') || '-',
          t.area ?? '-',
          t.createdAt,
          t.lastUsedAt ?? 'never',
          t.revokedAt ? `revoked ${t.revokedAt}` : 'active',
        ]);
      }
      process.stdout.write(`${table(rows)}\n`);
    });

  withConfigOptions(token.command('revoke'))
    .description('revoke a token: requests with it are refused from now on')
    .argument('<name>', 'the token name, as `hearth token list` shows it')
    .action(async (name: string, flags: CommonFlags) => {
      const { revokeToken } = await import('../daemon/methods/tokens.js');
      const t = await tokens(flags, 'token.revoke', { name }, (ctx, p) => revokeToken(ctx, p as { name: string }));
      process.stdout.write(`revoked token ${t.name} (${t.principal}); its principal's roles are left as they are\n`);
    });
}
