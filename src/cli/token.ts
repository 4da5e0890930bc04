// `hearth token create|list|revoke`: bearer tokens for the HTTP API (and MCP).
// A token names a principal (default mcp:<name>); its roles live in the
// policy table, beside every other principal's. The secret is printed once.
import type { Command } from 'commander';
import type { Db } from '../db/database.js';
import type { TokenStore } from '../auth/tokens.js';
import type { SqlitePolicy } from '../policy/engine.js';
import type { CommandOutput } from '../daemon/protocol.js';
import { databasePathOrExit, withConfigOptions, type CommonFlags } from './options.js';
import { table } from './format.js';
import { CliFailure, collect, failed } from './failure.js';
import { answer } from './via-daemon.js';

const PRINCIPAL_RE = /^(voice|chat|flow|mcp|cli|http|agent):[A-Za-z0-9_.@:-]{1,100}$/;

export interface TokenContext {
  tokens: TokenStore;
  policy: SqlitePolicy;
  db: Db;
}

/** What a token command prints, on the daemon's stores or on the database opened here. */
export async function tokenOutput(ctx: TokenContext, method: TokenMethod, params: Record<string, unknown>): Promise<CommandOutput> {
  let stdout = '';
  const out = (s: string) => void (stdout += s);
  try {
    await TOKEN_BODIES[method](ctx, params as never, out);
    return { stdout };
  } catch (err) {
    return { ...failed(err), stdout };
  }
}

async function withStore(flags: CommonFlags, method: TokenMethod, params: Record<string, unknown>): Promise<void> {
  const path = await databasePathOrExit(flags);
  await answer(path, flags, method, params, async () => {
    const { openDatabase } = await import('../db/database.js');
    const { TokenStore } = await import('../auth/tokens.js');
    const { SqlitePolicy } = await import('../policy/engine.js');
    const db = openDatabase(path);
    try {
      return await tokenOutput({ tokens: new TokenStore(db), policy: new SqlitePolicy(db), db }, method, params);
    } finally {
      db.close();
    }
  });
}

type Out = (s: string) => void;
type CreateParams = { name: string; role?: string[]; principal?: string; area?: string; json?: boolean };
export type TokenMethod = 'token.create' | 'token.list' | 'token.revoke';

const TOKEN_BODIES: Record<TokenMethod, (ctx: TokenContext, params: never, out: Out) => Promise<void> | void> = {
  'token.create': async ({ tokens, policy, db }, flags: CreateParams, out: Out) => {
    const { TokenError } = await import('../auth/tokens.js');
    const { PolicyRuleError } = await import('../policy/rules.js');
    const name = flags.name;
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
      out(`${JSON.stringify({ ...info, roles, secret }, null, 2)}\n`);
      return;
    }
    out(
      `created token ${info.name} for ${info.principal} (roles: ${roles.length ? roles.join(', ') : 'none'}${info.area ? `; area ${info.area}` : ''})\n\n` +
        `  ${secret}\n\n` +
        'This secret is not shown again: copy it now. Send it as `Authorization: Bearer <secret>`.\n' +
        (roles.length ? '' : `Note: ${info.principal} has no roles, so the policy lets it act on nothing; give it some with --role (e.g. --role owner).\n`),
    );
  },
  'token.list': ({ tokens, policy }, flags: { json?: boolean }, out: Out) => {
    const list = tokens.list().map((t) => ({ ...t, roles: policy.rolesOf(t.principal) }));
    if (flags.json) {
      out(`${JSON.stringify(list, null, 2)}\n`);
      return;
    }
    if (!list.length) {
      out('no tokens; create one: hearth token create <name> --role owner\n');
      return;
    }
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
    out(`${table(rows)}\n`);
  },
  'token.revoke': ({ tokens }, { name }: { name: string }, out: Out) => {
    const info = tokens.info(name);
    if (!info) throw new CliFailure(`no token named ${JSON.stringify(name)}; see hearth token list`, 1);
    if (info.revokedAt) throw new CliFailure(`token ${name} was already revoked at ${info.revokedAt}`, 1);
    if (!tokens.revoke(name)) throw new CliFailure(`token ${name} could not be revoked`, 1);
    out(`revoked token ${name} (${info.principal}); its principal's roles are left as they are\n`);
  },
};

export function registerToken(program: Command): void {
  const token = program.command('token').description('bearer tokens for the HTTP API: create (the secret is shown once), list, revoke');

  withConfigOptions(token.command('create'))
    .description('create a token; prints its secret once')
    .argument('<name>', 'a name for the token (letters, digits, _ . -), e.g. kitchen-tablet')
    .option('--role <role>', 'a role of its principal, stored in the policy table, e.g. owner (repeat for more)', collect)
    .option('--principal <id>', 'the principal it acts as (default mcp:<name>), e.g. http:alice')
    .option('--area <area>', 'where the device holding it speaks from (e.g. Kitchen): "in here" means it, and policy rules may name it (--from-area)')
    .option('--json', 'print JSON')
    .action((name: string, flags: CommonFlags & { role?: string[]; principal?: string; area?: string; json?: boolean }) =>
      withStore(flags, 'token.create', { name, role: flags.role, principal: flags.principal, area: flags.area, json: flags.json }),
    );

  withConfigOptions(token.command('list', { isDefault: true }))
    .description('list tokens (never their secrets); what `hearth token` alone does')
    .option('--json', 'print JSON')
    .action((flags: CommonFlags & { json?: boolean }) => withStore(flags, 'token.list', { json: flags.json }));

  withConfigOptions(token.command('revoke'))
    .description('revoke a token: requests with it are refused from now on')
    .argument('<name>', 'the token name, as `hearth token list` shows it')
    .action((name: string, flags: CommonFlags) => withStore(flags, 'token.revoke', { name }));
}
