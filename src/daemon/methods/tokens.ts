// `token.create`, `token.list`, `token.revoke`: bearer tokens for the HTTP API and MCP. A token names a principal;
// its roles live in the policy table. The secret is in the create answer only.
import { TokenError, type TokenStore } from '../../auth/tokens.js';
import { PRINCIPAL_ID } from '../../core/principal.js';
import type { Db } from '../../db/database.js';
import type { SqlitePolicy } from '../../policy/engine.js';
import { PolicyRuleError } from '../../policy/rules.js';
import { badParams, notDone, notFound } from '../protocol.js';
import type { TokenCreated, TokenJson } from '../schema.js';

export interface TokenContext {
  tokens: TokenStore;
  policy: SqlitePolicy;
  db: Db;
}

export function createToken(ctx: TokenContext, p: { name: string; role?: string[]; principal?: string; area?: string }): TokenCreated {
  if (p.principal !== undefined && !PRINCIPAL_ID.test(p.principal)) {
    throw badParams(`principal ${JSON.stringify(p.principal)}: a principal looks like http:alice, voice:kitchen, mcp:<name> or cli:<user>`);
  }
  let made: ReturnType<TokenStore['create']>;
  try {
    // Both or neither: a token whose roles could not be stored is not made.
    made = ctx.db.transaction(() => {
      const m = ctx.tokens.create(p.name, p.principal, p.area);
      if (p.role) ctx.policy.setRoles(m.info.principal, p.role);
      return m;
    })();
  } catch (err) {
    if (err instanceof TokenError) throw badParams(err.message);
    if (err instanceof PolicyRuleError) throw badParams(`role: ${err.message}`);
    throw err;
  }
  return { ...made.info, roles: ctx.policy.rolesOf(made.info.principal), secret: made.secret } as TokenCreated;
}

export function listTokens(ctx: TokenContext): TokenJson[] {
  return ctx.tokens.list().map((t) => ({ ...t, roles: ctx.policy.rolesOf(t.principal) }) as TokenJson);
}

export function revokeToken(ctx: TokenContext, p: { name: string }): TokenJson {
  const info = ctx.tokens.info(p.name);
  if (!info) throw notFound(`no token named ${JSON.stringify(p.name)}; see hearth token list`);
  if (info.revokedAt) throw notDone(`token ${p.name} was already revoked at ${info.revokedAt}`);
  if (!ctx.tokens.revoke(p.name)) throw notDone(`token ${p.name} could not be revoked`);
  return { ...ctx.tokens.info(p.name)!, roles: ctx.policy.rolesOf(info.principal) } as TokenJson;
}
