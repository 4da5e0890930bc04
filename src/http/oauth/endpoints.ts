// OAuth for MCP over HTTP, as the MCP authorization spec (2025-11-25) has it:
// protected resource metadata (RFC 9728) and authorization server metadata
// (RFC 8414, and the same at OpenID's discovery address), registration by
// client metadata documents or RFC 7591, the authorization-code flow with
// PKCE S256 only, and resource indicators (RFC 8707): a token is good for
// this Hearth's /mcp and nothing else (not /api, not another server).
// The consent is Hearth's own page (consent-page.ts); an owner signs in on it
// and picks the principal and roles the client acts as.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ACCESS_PREFIX, OAuthError, OAuthStore, normalResource, slugOf, type OAuthClient } from '../../auth/oauth.js';
import { PRINCIPAL_ID, type Principal } from '../../core/principal.js';
import type { Hearth } from '../../hearth.js';
import type { Logger } from '../../log.js';
import { errorOf } from '../../util/error.js';
import { optionalBoolean, onlyFields, requiredString } from '../body.js';
import { badField, HttpError } from '../errors.js';
import { isOwner, type Route } from '../route.js';
import { fetchClientDocument, isDocumentClientId } from './client-document.js';
import { AUTHORIZE_PATH, isConsentFile, sendConsentFile } from './consent-page.js';
import { checkRedirectUris } from './redirect-uris.js';
import { publicUrlOf } from './public-url.js';

const FORM_LIMIT = 16 * 1024;
/** Registrations (open to anyone, RFC 7591) accepted per minute: a flood gets 429s, not a busy database. */
const REGISTRATIONS_PER_MINUTE = 30;
const JSON_LIMIT = 64 * 1024;

export const WELL_KNOWN_RESOURCE = '/.well-known/oauth-protected-resource';
const WELL_KNOWN_SERVER = '/.well-known/oauth-authorization-server';
const WELL_KNOWN_OPENID = '/.well-known/openid-configuration';
const TOKEN_PATH = '/oauth/token';
const REGISTER_PATH = '/oauth/register';

/** A checked authorization request: who asks, where the answer goes, and what for. */
interface AuthorizationRequest {
  client: OAuthClient;
  redirectUri: string;
  state?: string;
  codeChallenge: string;
  resource: string;
  /** Roles the client asked for (its `scope`), as given. */
  asked: string[];
  base: string;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(text);
}

/** Clients in browsers (the Inspector) fetch these from their own origin; nothing here rides on a cookie, so any origin may read them. */
const CORS = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, POST, OPTIONS',
  'access-control-allow-headers': 'authorization, content-type, mcp-protocol-version',
  'access-control-max-age': '600',
};

function readBody(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      if (size > limit) return; // refused already: the rest is read and dropped, so the answer reaches the client
      size += chunk.length;
      if (size > limit) {
        chunks.length = 0;
        reject(new OAuthError('invalid_request', `the request body is larger than ${limit} bytes`, 413));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export class OAuthEndpoints {
  readonly store: OAuthStore;
  private readonly mcpPath: string;
  /** When the registrations of the last minute came. */
  private registrations: number[] = [];

  constructor(
    private readonly hearth: Hearth,
    private readonly log: Logger,
    options: { now?: () => number } = {},
  ) {
    this.store = new OAuthStore(hearth.db, hearth.tokens, hearth.policy, options);
    this.mcpPath = hearth.bridge.config.http.mcpPath;
  }

  private get trustedOrigins(): readonly string[] {
    return this.hearth.bridge.config.http.trustedOrigins;
  }

  /** OAuth is there only where MCP over HTTP is. */
  get enabled(): boolean {
    return this.mcpPath !== '';
  }

  /**
   * Paths answered before the Origin check: clients in other origins fetch them and none uses ambient credentials;
   * the consent page is where an app sends the browser from its own site.
   */
  servesOpen(path: string, method = 'GET'): boolean {
    if (!this.enabled) return false;
    if (isConsentFile(path)) return method === 'GET';
    return (
      path === WELL_KNOWN_RESOURCE ||
      path === `${WELL_KNOWN_RESOURCE}${this.mcpPath}` ||
      path === WELL_KNOWN_SERVER ||
      path === WELL_KNOWN_OPENID ||
      path === TOKEN_PATH ||
      path === REGISTER_PATH
    );
  }

  async handleOpen(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    try {
      if (req.method === 'OPTIONS') {
        res.writeHead(204, CORS);
        res.end();
        return;
      }
      if (isConsentFile(path)) {
        await sendConsentFile(res, path);
        return;
      }
      const where = publicUrlOf(req, this.trustedOrigins);
      if ('problem' in where) throw new OAuthError('invalid_request', where.problem, 403);
      const base = where.base;
      if (path.startsWith('/.well-known/')) {
        if (req.method !== 'GET') throw new OAuthError('invalid_request', `${req.method} is not allowed here; use GET`, 405);
        sendJson(res, 200, path.startsWith(WELL_KNOWN_RESOURCE) ? this.resourceMetadata(base) : this.serverMetadata(base), CORS);
        return;
      }
      if (req.method !== 'POST') throw new OAuthError('invalid_request', `${req.method} is not allowed here; use POST`, 405);
      if (path === TOKEN_PATH) sendJson(res, 200, await this.token(req, base), CORS);
      else sendJson(res, 201, await this.register(req), CORS);
    } catch (err) {
      if (!req.readableEnded) req.resume();
      const known = err instanceof OAuthError ? err : undefined;
      if (!known) this.log.error({ err: errorOf(err), path }, 'OAuth endpoint failed');
      const status = known?.status ?? 500;
      sendJson(res, status, { error: known?.error ?? 'server_error', error_description: known?.message ?? 'internal error' }, CORS);
    }
  }

  private resource(base: string): string {
    return `${base}${this.mcpPath}`;
  }

  /** RFC 9728: where this resource's tokens come from. */
  resourceMetadata(base: string): Record<string, unknown> {
    return {
      resource: this.resource(base),
      authorization_servers: [base],
      bearer_methods_supported: ['header'],
      resource_name: 'Hearth',
    };
  }

  /** RFC 8414 (served at OpenID's discovery address too, which the MCP spec has clients try). */
  serverMetadata(base: string): Record<string, unknown> {
    return {
      issuer: base,
      authorization_endpoint: `${base}${AUTHORIZE_PATH}`,
      token_endpoint: `${base}${TOKEN_PATH}`,
      registration_endpoint: `${base}${REGISTER_PATH}`,
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      client_id_metadata_document_supported: true,
      authorization_response_iss_parameter_supported: true,
      // OpenID discovery's required members, for clients that read that document: Hearth issues no ID tokens.
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['none'],
    };
  }

  // ---- the token endpoint ---------------------------------------------------

  private async token(req: IncomingMessage, base: string): Promise<unknown> {
    const type = String(req.headers['content-type'] ?? '')
      .split(';')[0]
      .trim()
      .toLowerCase();
    if (type !== 'application/x-www-form-urlencoded') throw new OAuthError('invalid_request', 'the token request must be application/x-www-form-urlencoded');
    const form = new URLSearchParams(await readBody(req, FORM_LIMIT));
    const field = (name: string, required = true): string | undefined => {
      const all = form.getAll(name);
      if (all.length > 1) throw new OAuthError('invalid_request', `${name} is given ${all.length} times`);
      if (required && !all[0]) throw new OAuthError('invalid_request', `${name} is required`);
      return all[0] || undefined;
    };
    const clientId = field('client_id')!;
    if (!this.store.client(clientId)) throw new OAuthError('invalid_client', `no client ${JSON.stringify(clientId.slice(0, 100))}; register first`, 401);
    const resource = field('resource', false);
    if (resource !== undefined && normalResource(resource) !== normalResource(this.resource(base)))
      throw new OAuthError(
        'invalid_target',
        `resource ${JSON.stringify(resource.slice(0, 200))} is not served here; this server's resource is ${this.resource(base)}`,
      );
    const grantType = field('grant_type');
    if (grantType === 'authorization_code') {
      return this.store.exchange({
        code: field('code')!,
        clientId,
        redirectUri: field('redirect_uri')!,
        codeVerifier: field('code_verifier')!,
        resource,
      });
    }
    if (grantType === 'refresh_token') return this.store.refresh({ refreshToken: field('refresh_token')!, clientId, resource });
    throw new OAuthError('unsupported_grant_type', `grant_type ${JSON.stringify(grantType)}: Hearth issues tokens for authorization_code and refresh_token`);
  }

  // ---- RFC 7591 registration -------------------------------------------------

  private async register(req: IncomingMessage): Promise<unknown> {
    const now = Date.now();
    this.registrations = this.registrations.filter((t) => t > now - 60_000);
    if (this.registrations.length >= REGISTRATIONS_PER_MINUTE)
      throw new OAuthError(
        'temporarily_unavailable',
        `more than ${REGISTRATIONS_PER_MINUTE} clients registered in the last minute; try again in a minute`,
        429,
      );
    this.registrations.push(now);
    const bad = (why: string) => new OAuthError('invalid_client_metadata', why);
    let meta: unknown;
    try {
      meta = JSON.parse(await readBody(req, JSON_LIMIT));
    } catch (err) {
      if (err instanceof OAuthError) throw err;
      throw bad('the registration body is not JSON');
    }
    if (!meta || typeof meta !== 'object' || Array.isArray(meta)) throw bad('the registration body must be a JSON object');
    const m = meta as Record<string, unknown>;
    const redirectUris = checkRedirectUris(m.redirect_uris, (why) => new OAuthError('invalid_redirect_uri', why));
    const auth = m.token_endpoint_auth_method;
    if (auth !== undefined && auth !== 'none' && typeof auth !== 'string') throw bad('token_endpoint_auth_method must be a string');
    for (const [key, allowed] of [
      ['grant_types', ['authorization_code', 'refresh_token']],
      ['response_types', ['code']],
    ] as const) {
      const v = m[key];
      if (v === undefined) continue;
      if (!Array.isArray(v) || v.some((x) => !(allowed as readonly string[]).includes(x as string)))
        throw bad(`${key} may hold only ${allowed.join(', ')}, got ${JSON.stringify(v).slice(0, 200)}`);
    }
    const name = typeof m.client_name === 'string' && m.client_name.trim() ? m.client_name.trim().slice(0, 100) : 'MCP client';
    const client = this.store.register(name, redirectUris);
    this.log.info({ client: client.clientId, name }, 'OAuth client registered');
    return {
      client_id: client.clientId,
      client_id_issued_at: Math.floor(Date.now() / 1000),
      client_name: name,
      redirect_uris: redirectUris,
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      // Public clients: PKCE proves who exchanges a code, and no secret is stored on a user's machine.
      token_endpoint_auth_method: 'none',
    };
  }

  // ---- /mcp --------------------------------------------------------------------

  /** The 401 header that tells an MCP client where to sign in (none where OAuth is not served). */
  challenge(req: IncomingMessage, error?: string): string {
    const where = publicUrlOf(req, this.trustedOrigins);
    if (!this.enabled || 'problem' in where) return 'Bearer realm="hearth"';
    const metadata = `${where.base}${WELL_KNOWN_RESOURCE}${this.mcpPath}`;
    return `Bearer realm="hearth", resource_metadata="${metadata}"${error ? `, error="invalid_token", error_description="${error.replace(/["\\]/g, '')}"` : ''}`;
  }

  /**
   * Who calls /mcp: an access token issued here for this resource, or (through `pasted`) a bearer token made with
   * `hearth token create`. A 401 carries the resource metadata's address.
   */
  authenticateMcp(req: IncomingMessage, pasted: () => { principal: Principal; token?: string }): { principal: Principal; token?: string } {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
    if (m?.[1].startsWith(ACCESS_PREFIX)) {
      const where = publicUrlOf(req, this.trustedOrigins);
      const found = 'problem' in where ? { problem: where.problem } : this.store.verifyAccess(m[1], this.resource(where.base));
      if ('problem' in found) {
        throw new HttpError(
          401,
          'unauthorized',
          `the access token is not valid here: ${found.problem}`,
          {},
          { 'www-authenticate': this.challenge(req, found.problem) },
        );
      }
      return { principal: { id: found.principal, roles: this.hearth.policy.rolesOf(found.principal) }, token: found.tokenName };
    }
    try {
      return pasted();
    } catch (err) {
      if (err instanceof HttpError && err.status === 401)
        throw new HttpError(401, err.code, err.message, err.extra, { 'www-authenticate': this.challenge(req) });
      throw err;
    }
  }

  // ---- the consent (Hearth's page asks these, with the owner's token) ---------

  /** Check an authorization request as the page passes it on (its query string). */
  private async check(req: IncomingMessage, query: string): Promise<AuthorizationRequest> {
    const where = publicUrlOf(req, this.trustedOrigins);
    if ('problem' in where) throw new HttpError(403, 'https_required', where.problem);
    const q = new URLSearchParams(query.startsWith('?') ? query.slice(1) : query);
    const one = (name: string): string | undefined => {
      const all = q.getAll(name);
      if (all.length > 1) throw badField(name, `is given ${all.length} times`);
      return all[0] || undefined;
    };
    const clientId = one('client_id');
    if (!clientId) throw badField('client_id', 'is required: the app did not say who it is');
    let client = this.store.client(clientId);
    if (isDocumentClientId(clientId)) {
      try {
        client = this.store.rememberDocumentClient(await fetchClientDocument(clientId, this.hearth.bridge.config.http.oauthDocumentHosts));
      } catch (err) {
        if (err instanceof OAuthError) throw new HttpError(400, err.error, err.message);
        throw err;
      }
    }
    if (!client) throw badField('client_id', `no client ${JSON.stringify(clientId.slice(0, 100))} is registered here; the app should register again`);
    const redirectUri = one('redirect_uri') ?? (client.redirectUris.length === 1 ? client.redirectUris[0] : undefined);
    if (!redirectUri) throw badField('redirect_uri', 'is required: this client registered several');
    // Nothing goes to an address the client did not register: the error is shown here, not sent there.
    if (!client.redirectUris.includes(redirectUri))
      throw badField('redirect_uri', `${JSON.stringify(redirectUri.slice(0, 200))} is not one this client registered; nothing was sent to it`);
    const state = one('state');
    const back = (error: string, description: string) => {
      const url = new URL(redirectUri);
      url.searchParams.set('error', error);
      url.searchParams.set('error_description', description);
      if (state !== undefined) url.searchParams.set('state', state);
      url.searchParams.set('iss', where.base);
      return new HttpError(400, error, description, { redirect: url.href });
    };
    if (state !== undefined && state.length > 1000) throw back('invalid_request', 'state is longer than 1000 characters');
    if (one('response_type') !== 'code') throw back('unsupported_response_type', 'response_type must be code');
    const codeChallenge = one('code_challenge');
    if (!codeChallenge || !/^[A-Za-z0-9_-]{43}$/.test(codeChallenge)) throw back('invalid_request', 'code_challenge is required (PKCE, S256)');
    if (one('code_challenge_method') !== 'S256') throw back('invalid_request', 'code_challenge_method must be S256');
    const ours = this.resource(where.base);
    const resource = one('resource');
    if (resource !== undefined && normalResource(resource) !== normalResource(ours))
      throw back('invalid_target', `resource ${resource.slice(0, 200)} is not served here; this server's resource is ${ours}`);
    const asked = (one('scope') ?? '').split(' ').filter(Boolean).slice(0, 20);
    return { client, redirectUri, state, codeChallenge, resource: normalResource(ours), asked, base: where.base };
  }

  /** Roles an owner may give a client: those in use in this home (held by a principal or named by a rule) and the owner's own. */
  private grantable(owner: Principal): string[] {
    const roles = new Set(owner.roles);
    for (const p of this.hearth.policy.listPrincipals()) for (const r of p.roles) roles.add(r);
    for (const rule of this.hearth.policy.list()) for (const s of rule.subject.split('|')) if (s.startsWith('role:') && s.length > 5) roles.add(s.slice(5));
    return [...roles].sort();
  }

  private mustBeOwner(principal: Principal): void {
    if (!isOwner(principal))
      throw new HttpError(
        403,
        'forbidden',
        `only an owner may let an app act in this home; ${principal.id} is not one (roles: ${principal.roles.join(', ') || 'none'})`,
      );
  }

  routes(): Route[] {
    if (!this.enabled) return [];
    return [
      {
        method: 'POST',
        path: '/api/oauth/authorize',
        handler: async ({ req, principal, body }) => {
          const b = await body();
          onlyFields(b, ['query']);
          this.mustBeOwner(principal);
          const r = await this.check(req, requiredString(b, 'query', { max: 8000 }));
          const grantable = this.grantable(principal);
          const principalId = `mcp:${slugOf(r.client.name)}`;
          return {
            client: { id: r.client.clientId, name: r.client.name, redirectUri: r.redirectUri, source: r.client.source },
            resource: r.resource,
            you: principal.id,
            principal: principalId,
            principalRoles: this.hearth.policy.rolesOf(principalId),
            asked: r.asked,
            grantable,
          };
        },
      },
      {
        method: 'POST',
        path: '/api/oauth/decision',
        handler: async ({ req, principal, body }) => {
          const b = await body();
          onlyFields(b, ['query', 'allow', 'principal', 'roles']);
          this.mustBeOwner(principal);
          const r = await this.check(req, requiredString(b, 'query', { max: 8000 }));
          const allow = optionalBoolean(b, 'allow');
          if (allow === undefined) throw badField('allow', 'is required: true to let the app in, false to refuse');
          const url = new URL(r.redirectUri);
          if (r.state !== undefined) url.searchParams.set('state', r.state);
          url.searchParams.set('iss', r.base);
          if (!allow) {
            url.searchParams.set('error', 'access_denied');
            url.searchParams.set('error_description', `${principal.id} refused the sign-in`);
            this.log.info({ client: r.client.clientId, by: principal.id }, 'OAuth sign-in refused');
            return { redirect: url.href };
          }
          const id = requiredString(b, 'principal', { max: 104 });
          if (!id.startsWith('mcp:') || !PRINCIPAL_ID.test(id))
            throw badField('principal', `${JSON.stringify(id)}: an app acts as an mcp: principal, e.g. mcp:${slugOf(r.client.name)}`);
          const roles = b.roles;
          if (!Array.isArray(roles) || !roles.length || roles.some((x) => typeof x !== 'string'))
            throw badField('roles', 'tick at least one role: a principal without roles may do nothing');
          const grantable = this.grantable(principal);
          const beyond = (roles as string[]).filter((x) => !grantable.includes(x));
          if (beyond.length)
            throw new HttpError(
              403,
              'forbidden',
              `roles: ${beyond.join(', ')} ${beyond.length === 1 ? 'is' : 'are'} not yours to give; you may give ${grantable.join(', ')}`,
              {
                field: 'roles',
              },
            );
          const code = this.store.issueCode({
            clientId: r.client.clientId,
            clientName: r.client.name,
            redirectUri: r.redirectUri,
            codeChallenge: r.codeChallenge,
            resource: r.resource,
            principal: id,
            roles: roles as string[],
            grantedBy: principal.id,
          });
          url.searchParams.set('code', code);
          this.log.info({ client: r.client.clientId, principal: id, roles, by: principal.id }, 'OAuth sign-in allowed');
          return { redirect: url.href };
        },
      },
      {
        method: 'GET',
        path: '/api/oauth/grants',
        handler: ({ principal }) => {
          this.mustBeOwner(principal);
          return { grants: this.store.grants().map((g) => ({ ...g, roles: this.hearth.policy.rolesOf(g.principal) })) };
        },
      },
      {
        method: 'POST',
        path: '/api/oauth/grants/:name/revoke',
        handler: ({ principal, params }) => {
          this.mustBeOwner(principal);
          const grant = this.store.grant(params.name);
          if (!grant) throw new HttpError(404, 'not_found', `no app sign-in named ${JSON.stringify(params.name)}; GET /api/oauth/grants lists them`);
          if (grant.revokedAt) throw new HttpError(409, 'already_revoked', `${params.name} was revoked at ${grant.revokedAt}`);
          this.hearth.tokens.revoke(params.name);
          return { revoked: this.store.grant(params.name) };
        },
      },
    ];
  }
}

// One per Hearth, as the MCP handler is.
const endpoints = new WeakMap<Hearth, OAuthEndpoints>();

export function oauthEndpointsFor(hearth: Hearth, log: Logger): OAuthEndpoints {
  let e = endpoints.get(hearth);
  if (!e) endpoints.set(hearth, (e = new OAuthEndpoints(hearth, log)));
  return e;
}
