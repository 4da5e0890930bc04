// `hearth token create|list|revoke`: bearer tokens for the HTTP API (and MCP).
// A token names a principal (default mcp:<name>); its roles live in the
// policy table, beside every other principal's. The secret is printed once.
import type { Command } from 'commander';
import { openDatabase, type Db } from '../db/database.js';
import { TokenError, TokenStore } from '../auth/tokens.js';
import { SqlitePolicy } from '../policy/engine.js';
import { PolicyRuleError } from '../policy/rules.js';
import { configOrExit, withConfigOptions, type CommonFlags } from './options.js';
import { table } from './format.js';
import { CliFailure, guarded } from './policy.js';

const PRINCIPAL_RE = /^(voice|chat|flow|mcp|cli|http|agent):[A-Za-z0-9_.@:-]{1,100}$/;

async function withStore(flags: CommonFlags, body: (tokens: TokenStore, policy: SqlitePolicy, db: Db) => void): Promise<void> {
  await guarded(() => {
    const { config } = configOrExit(flags);
    const db = openDatabase(config.database.path);
    try {
      body(new TokenStore(db), new SqlitePolicy(db), db);
    } finally {
      db.close();
    }
  });
}

export function registerToken(program: Command): void {
  const token = program
    .command('token')
    .description('bearer tokens for the HTTP API: create (the secret is shown once), list, revoke');

  withConfigOptions(token.command('create'))
    .description('create a token; prints its secret once')
    .argument('<name>', 'a name for the token (letters, digits, _ . -), e.g. kitchen-tablet')
    .option('--role <roles...>', 'roles of its principal, stored in the policy table (e.g. owner)')
    .option('--principal <id>', 'the principal it acts as (default mcp:<name>), e.g. http:alice')
    .option('--area <area>', 'where the device holding it speaks from (e.g. Kitchen): "in here" means it, and policy rules may name it (--from-area)')
    .option('--json', 'print JSON')
    .action((name: string, flags: CommonFlags & { role?: string[]; principal?: string; area?: string; json?: boolean }) =>
      withStore(flags, (tokens, policy, db) => {
        if (flags.principal !== undefined && !PRINCIPAL_RE.test(flags.principal)) {
          throw new CliFailure(`--principal ${JSON.stringify(flags.principal)}: a principal looks like http:alice, voice:kitchen, mcp:<name> or cli:<user>`);
        }
        let created: ReturnType<TokenStore['create']>;
        try {
          // Both or neither: a token whose roles could not be stored is not made.
          created = db.transaction(() => {
            const made = tokens.create(name, flags.principal, flags.area);
            if (flags.role) policy.setRoles(made.info.principal, flags.role);
            return made;
          })();
        } catch (err) {
          if (err instanceof TokenError) throw new CliFailure(err.message);
          if (err instanceof PolicyRuleError) throw new CliFailure(`--role: ${err.message}`);
          throw err;
        }
        const { secret, info } = created;
        const roles = policy.rolesOf(info.principal);
        if (flags.json) {
          process.stdout.write(`${JSON.stringify({ ...info, roles, secret }, null, 2)}\n`);
          return;
        }
        process.stdout.write(
          `created token ${info.name} for ${info.principal} (roles: ${roles.length ? roles.join(', ') : 'none'}${info.area ? `; area ${info.area}` : ''})\n\n` +
            `  ${secret}\n\n` +
            'This secret is not shown again: copy it now. Send it as `Authorization: Bearer <secret>`.\n' +
            (roles.length ? '' : `Note: ${info.principal} has no roles, so the policy lets it act on nothing; give it some with --role (e.g. --role owner).\n`),
        );
      }),
    );

  withConfigOptions(token.command('list'))
    .description('list tokens (never their secrets)')
    .option('--json', 'print JSON')
    .action((flags: CommonFlags & { json?: boolean }) =>
      withStore(flags, (tokens, policy) => {
        const list = tokens.list().map((t) => ({ ...t, roles: policy.rolesOf(t.principal) }));
        if (flags.json) {
          process.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
          return;
        }
        if (!list.length) {
          process.stdout.write('no tokens; create one: hearth token create <name> --role owner\n');
          return;
        }
        const rows = [['NAME', 'PRINCIPAL', 'ROLES', 'AREA', 'CREATED', 'LAST USED', 'STATUS']];
        for (const t of list) {
          rows.push([t.name, t.principal, t.roles.join(',') || '-', t.area ?? '-', t.createdAt, t.lastUsedAt ?? 'never', t.revokedAt ? `revoked ${t.revokedAt}` : 'active']);
        }
        process.stdout.write(`${table(rows)}\n`);
      }),
    );

  withConfigOptions(token.command('revoke'))
    .description('revoke a token: requests with it are refused from now on')
    .argument('<name>', 'the token name, as `hearth token list` shows it')
    .action((name: string, flags: CommonFlags) =>
      withStore(flags, (tokens) => {
        const info = tokens.info(name);
        if (!info) throw new CliFailure(`no token named ${JSON.stringify(name)}; see hearth token list`, 1);
        if (info.revokedAt) throw new CliFailure(`token ${name} was already revoked at ${info.revokedAt}`, 1);
        if (!tokens.revoke(name)) throw new CliFailure(`token ${name} could not be revoked`, 1);
        process.stdout.write(`revoked token ${name} (${info.principal}); its principal's roles are left as they are\n`);
      }),
    );
}
