// Hearth as its own OAuth 2.1 authorization server for MCP over HTTP: clients
// (registered, or known by their metadata document's URL), one-time codes
// bound to a PKCE challenge and a resource, and grants. A grant is what an
// owner consented to: a principal (whose roles live in the policy table), a
// client and the one resource (Hearth's /mcp) its tokens are good for. It is a
// row of the tokens table too, so `hearth token list` shows it and revoking it
// ends every token of it. Access tokens are short-lived; a refresh rotates both
// tokens, and a refresh token used twice revokes the grant (it was copied).
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Db } from '../db/database.js';
import type { TokenStore } from './tokens.js';

export const ACCESS_PREFIX = 'hearth_mcp_at_';
export const REFRESH_PREFIX = 'hearth_mcp_rt_';
/** Seconds an access token lives: short, so a revoked grant stops soon even where no check runs. */
export const ACCESS_TTL_S = 15 * 60;
/** Seconds a refresh token lives unused (each refresh gives a new one). */
export const REFRESH_TTL_S = 30 * 24 * 3600;
/** A code is exchanged at once by the client that asked for it. */
const CODE_TTL_MS = 60_000;
/** Codes waiting at once (a flood of consents cannot grow memory). */
const MAX_CODES = 1000;
/** Registered clients kept (RFC 7591 is open to anyone: the oldest unused go first). */
const MAX_CLIENTS = 500;

/** An OAuth error as RFC 6749 names them (`invalid_grant`, `invalid_target`...), with a status. */
export class OAuthError extends Error {
  constructor(
    readonly error: string,
    message: string,
    readonly status = 400,
  ) {
    super(message);
    this.name = 'OAuthError';
  }
}

export interface OAuthClient {
  clientId: string;
  name: string;
  redirectUris: string[];
  source: 'registered' | 'metadata_document';
}

export interface GrantInfo {
  /** The grant's row in the tokens table. */
  tokenName: string;
  principal: string;
  clientId: string;
  clientName: string;
  resource: string;
  grantedBy: string;
  createdAt: string;
  revokedAt: string | null;
  lastUsedAt: string | null;
}

export interface TokenSet {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

/** What the owner consented to, carried by a code until the client exchanges it. */
export interface Consent {
  clientId: string;
  clientName: string;
  redirectUri: string;
  /** S256 of the client's code_verifier. */
  codeChallenge: string;
  resource: string;
  principal: string;
  roles: string[];
  grantedBy: string;
}

interface Code extends Consent {
  expires: number;
  /** Set once exchanged: a second exchange revokes this grant (RFC 6749 4.1.2). */
  grant?: string;
}

interface Roles {
  setRoles(id: string, roles: string[]): void;
  rolesOf(id: string): string[];
}

const hash = (secret: string) => createHash('sha256').update(secret).digest('hex');
const secret = (prefix: string) => `${prefix}${randomBytes(32).toString('base64url')}`;

/** base64url(SHA-256(verifier)) === challenge, in constant time (RFC 7636 S256). */
export function pkceMatches(verifier: string, challenge: string): boolean {
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) return false;
  const got = Buffer.from(createHash('sha256').update(verifier).digest('base64url'));
  const want = Buffer.from(challenge);
  return got.length === want.length && timingSafeEqual(got, want);
}

/** `Claude Desktop` -> `claude-desktop`: a principal's or a token's name from a client's (untrusted) name. */
export function slugOf(name: string): string {
  const slug = name
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/, '');
  return slug || 'client';
}

export class OAuthStore {
  private readonly codes = new Map<string, Code>();
  private readonly now: () => number;
  private readonly stmts;

  constructor(
    private readonly db: Db,
    private readonly tokens: TokenStore,
    private readonly roles: Roles,
    options: { now?: () => number } = {},
  ) {
    this.now = options.now ?? Date.now;
    this.stmts = {
      client: db.prepare('SELECT * FROM oauth_clients WHERE client_id = ?'),
      insertClient: db.prepare('INSERT INTO oauth_clients (client_id, name, redirect_uris, source, created_at) VALUES (?, ?, ?, ?, ?)'),
      upsertClient: db.prepare(
        'INSERT INTO oauth_clients (client_id, name, redirect_uris, source, created_at) VALUES (?, ?, ?, ?, ?) ' +
          'ON CONFLICT (client_id) DO UPDATE SET name = excluded.name, redirect_uris = excluded.redirect_uris',
      ),
      countRegistered: db.prepare("SELECT count(*) FROM oauth_clients WHERE source = 'registered'").pluck(),
      dropOldest: db.prepare(
        "DELETE FROM oauth_clients WHERE client_id IN (SELECT c.client_id FROM oauth_clients c WHERE c.source = 'registered' " +
          'AND NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.client_id = c.client_id) ORDER BY c.created_at LIMIT 1)',
      ),
      insertGrant: db.prepare(
        'INSERT INTO oauth_grants (token_name, client_id, client_name, resource, granted_by, access_hash, access_expires_at, refresh_hash, refresh_expires_at, created_at) ' +
          'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      byAccess: db.prepare('SELECT g.*, t.principal, t.revoked_at FROM oauth_grants g JOIN tokens t ON t.name = g.token_name WHERE g.access_hash = ?'),
      byRefresh: db.prepare('SELECT g.*, t.principal, t.revoked_at FROM oauth_grants g JOIN tokens t ON t.name = g.token_name WHERE g.refresh_hash = ?'),
      byPreviousRefresh: db.prepare('SELECT token_name FROM oauth_grants WHERE previous_refresh_hash = ?').pluck(),
      rotate: db.prepare(
        'UPDATE oauth_grants SET access_hash = ?, access_expires_at = ?, refresh_hash = ?, refresh_expires_at = ?, previous_refresh_hash = ? WHERE token_name = ?',
      ),
      used: db.prepare('UPDATE tokens SET last_used_at = ? WHERE name = ?'),
      list: db.prepare(
        'SELECT g.*, t.principal, t.revoked_at, t.last_used_at FROM oauth_grants g JOIN tokens t ON t.name = g.token_name ORDER BY g.created_at',
      ),
      grant: db.prepare(
        'SELECT g.*, t.principal, t.revoked_at, t.last_used_at FROM oauth_grants g JOIN tokens t ON t.name = g.token_name WHERE g.token_name = ?',
      ),
    };
  }

  // ---- clients -----------------------------------------------------------

  /** RFC 7591: a new public client (PKCE, no secret). */
  register(name: string, redirectUris: string[]): OAuthClient {
    const clientId = `hearth-client-${randomBytes(12).toString('base64url')}`;
    this.db.transaction(() => {
      while ((this.stmts.countRegistered.get() as number) >= MAX_CLIENTS && this.stmts.dropOldest.run().changes > 0);
      this.stmts.insertClient.run(clientId, name, JSON.stringify(redirectUris), 'registered', new Date(this.now()).toISOString());
    })();
    return { clientId, name, redirectUris, source: 'registered' };
  }

  /** A client known by the URL of its metadata document, as last fetched. */
  rememberDocumentClient(client: Omit<OAuthClient, 'source'>): OAuthClient {
    this.stmts.upsertClient.run(client.clientId, client.name, JSON.stringify(client.redirectUris), 'metadata_document', new Date(this.now()).toISOString());
    return { ...client, source: 'metadata_document' };
  }

  client(clientId: string): OAuthClient | undefined {
    const row = this.stmts.client.get(clientId) as Record<string, string> | undefined;
    if (!row) return undefined;
    return { clientId: row.client_id, name: row.name, redirectUris: JSON.parse(row.redirect_uris) as string[], source: row.source as OAuthClient['source'] };
  }

  // ---- codes -------------------------------------------------------------

  /** A one-time code carrying the owner's consent (kept in memory: a restart asks the client to sign in again). */
  issueCode(consent: Consent): string {
    const now = this.now();
    for (const [k, c] of this.codes) if (c.expires <= now) this.codes.delete(k);
    if (this.codes.size >= MAX_CODES) throw new OAuthError('temporarily_unavailable', 'too many sign-ins waiting; try again in a minute', 503);
    const code = randomBytes(32).toString('base64url');
    this.codes.set(hash(code), { ...consent, roles: [...consent.roles], expires: now + CODE_TTL_MS });
    return code;
  }

  /** Exchange a code (once) for tokens: same client, same redirect URI, the verifier of its challenge, the same resource. */
  exchange(p: { code: string; clientId: string; redirectUri: string; codeVerifier: string; resource?: string }): TokenSet {
    const key = hash(p.code);
    const code = this.codes.get(key);
    if (!code || code.expires <= this.now()) throw new OAuthError('invalid_grant', 'the authorization code is unknown or expired; sign in again');
    if (code.grant) {
      // A code used twice was seen by someone else: what it gave is taken back.
      this.tokens.revoke(code.grant);
      this.codes.delete(key);
      throw new OAuthError('invalid_grant', 'the authorization code was already used; the tokens it gave are revoked');
    }
    if (code.clientId !== p.clientId) throw new OAuthError('invalid_grant', 'the authorization code was issued to another client');
    if (code.redirectUri !== p.redirectUri) throw new OAuthError('invalid_grant', 'redirect_uri differs from the one of the authorization request');
    if (!pkceMatches(p.codeVerifier, code.codeChallenge)) throw new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge');
    if (p.resource !== undefined && normalResource(p.resource) !== code.resource)
      throw new OAuthError('invalid_target', `resource ${JSON.stringify(p.resource)} is not the one the owner consented to (${code.resource})`);
    const made = this.db.transaction(() => {
      const name = this.freeName(`oauth.${slugOf(code.clientName)}`);
      this.tokens.createForGrant(name, code.principal);
      this.roles.setRoles(code.principal, code.roles);
      const set = this.newTokens();
      this.stmts.insertGrant.run(
        name,
        code.clientId,
        code.clientName,
        code.resource,
        code.grantedBy,
        hash(set.access_token),
        this.now() + ACCESS_TTL_S * 1000,
        hash(set.refresh_token),
        this.now() + REFRESH_TTL_S * 1000,
        new Date(this.now()).toISOString(),
      );
      return { name, set };
    })();
    code.grant = made.name;
    return { ...made.set, scope: code.roles.join(' ') };
  }

  /** A refresh: both tokens rotate; a refresh token used a second time revokes its grant. */
  refresh(p: { refreshToken: string; clientId: string; resource?: string }): TokenSet {
    const digest = hash(p.refreshToken);
    const row = this.stmts.byRefresh.get(digest) as GrantRow | undefined;
    if (!row) {
      const reused = this.stmts.byPreviousRefresh.get(digest) as string | undefined;
      if (reused) {
        this.tokens.revoke(reused);
        throw new OAuthError('invalid_grant', 'the refresh token was already used once; its grant is revoked (sign in again)');
      }
      throw new OAuthError('invalid_grant', 'the refresh token is unknown');
    }
    if (row.revoked_at) throw new OAuthError('invalid_grant', `the grant was revoked at ${row.revoked_at}; sign in again`);
    if (row.refresh_expires_at <= this.now()) throw new OAuthError('invalid_grant', 'the refresh token expired; sign in again');
    if (row.client_id !== p.clientId) throw new OAuthError('invalid_grant', 'the refresh token was issued to another client');
    if (p.resource !== undefined && normalResource(p.resource) !== row.resource)
      throw new OAuthError('invalid_target', `resource ${JSON.stringify(p.resource)} is not the one this grant is for (${row.resource})`);
    const set = this.newTokens();
    this.stmts.rotate.run(
      hash(set.access_token),
      this.now() + ACCESS_TTL_S * 1000,
      hash(set.refresh_token),
      this.now() + REFRESH_TTL_S * 1000,
      digest,
      row.token_name,
    );
    return { ...set, scope: this.roles.rolesOf(row.principal).join(' ') };
  }

  /** The grant of a valid access token for this resource, or why not (for the 401's error_description). */
  verifyAccess(token: string, resource: string): { principal: string; tokenName: string } | { problem: string } {
    if (!token.startsWith(ACCESS_PREFIX) || token.length > 200) return { problem: 'not a Hearth access token' };
    const row = this.stmts.byAccess.get(hash(token)) as GrantRow | undefined;
    if (!row) return { problem: 'the access token is unknown (refreshed since, or never issued)' };
    if (row.revoked_at) return { problem: `the grant was revoked at ${row.revoked_at}` };
    if (row.access_expires_at <= this.now()) return { problem: 'the access token expired; refresh it' };
    if (row.resource !== normalResource(resource)) return { problem: `the access token is for ${row.resource}, not ${resource}` };
    this.stmts.used.run(new Date(this.now()).toISOString(), row.token_name);
    return { principal: row.principal, tokenName: row.token_name };
  }

  grants(): GrantInfo[] {
    return (this.stmts.list.all() as GrantRow[]).map(toGrant);
  }

  grant(tokenName: string): GrantInfo | undefined {
    const row = this.stmts.grant.get(tokenName) as GrantRow | undefined;
    return row ? toGrant(row) : undefined;
  }

  private newTokens(): Omit<TokenSet, 'scope'> {
    return { access_token: secret(ACCESS_PREFIX), token_type: 'Bearer', expires_in: ACCESS_TTL_S, refresh_token: secret(REFRESH_PREFIX) };
  }

  private freeName(base: string): string {
    for (;;) {
      const name = `${base}.${randomBytes(3).toString('hex')}`;
      if (!this.tokens.info(name)) return name;
    }
  }
}

interface GrantRow {
  token_name: string;
  client_id: string;
  client_name: string;
  resource: string;
  granted_by: string;
  access_expires_at: number;
  refresh_expires_at: number;
  created_at: string;
  principal: string;
  revoked_at: string | null;
  last_used_at?: string | null;
}

function toGrant(row: GrantRow): GrantInfo {
  return {
    tokenName: row.token_name,
    principal: row.principal,
    clientId: row.client_id,
    clientName: row.client_name,
    resource: row.resource,
    grantedBy: row.granted_by,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
    lastUsedAt: row.last_used_at ?? null,
  };
}

/** A resource indicator compared as RFC 8707 and the MCP spec have it: the URL without fragment or trailing slash. */
export function normalResource(resource: string): string {
  try {
    const u = new URL(resource);
    u.hash = '';
    return u.href.replace(/\/$/, '');
  } catch {
    return resource;
  }
}
