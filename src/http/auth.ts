// Who is asking: a bearer token (TokenStore) names a principal, whose roles
// live in the policy table. Without auth (allowed only on a loopback address)
// everyone is `http:local`, an owner. Browsers from other origins are refused
// either way, so a web page cannot drive the home through a visitor's browser.
import type { IncomingMessage } from 'node:http';
import { ConfigError } from '../config/load.js';
import type { Hearth } from '../hearth.js';
import type { Principal } from '../tools/types.js';
import { isLoopbackHost } from '../util/loopback.js';
import { forbidden, HttpError } from './errors.js';

export const LOCAL_PRINCIPAL: Readonly<Principal> = Object.freeze({ id: 'http:local', roles: ['owner'] });
export const ANONYMOUS: Readonly<Principal> = Object.freeze({ id: 'http:anonymous', roles: [] });

const TOKEN_HINT = 'create one with `hearth token create <name> --role owner` and send it as `Authorization: Bearer <token>`';

/** `http.auth: false` only where nobody else can connect. */
export function checkAuthSetting(host: string, auth: boolean): void {
  if (auth || isLoopbackHost(host)) return;
  throw new ConfigError(
    'settings',
    'http.auth',
    `false is allowed only when http.host is a loopback address (127.0.0.0/8, ::1, localhost), not ${JSON.stringify(host)}: ` +
      'keep http.auth on and give clients tokens (hearth token create <name> --role owner), or bind http.host to 127.0.0.1',
  );
}

/** The host name of a Host header (`[::1]:8080` -> `::1`, `example.org:80` -> `example.org`). */
function hostName(header: string): string {
  if (header.startsWith('[')) return header.slice(1, header.indexOf(']') > 0 ? header.indexOf(']') : undefined);
  const colon = header.lastIndexOf(':');
  return colon > 0 && header.indexOf(':') === colon ? header.slice(0, colon) : header;
}

/**
 * Refuse a browser request from another origin (403). Requests without an
 * Origin header (curl, satellites, server-side clients) and same-origin pages
 * pass; `Sec-Fetch-Site` catches the no-cors requests that carry no Origin.
 * Without auth, the Host must be a loopback name too (DNS rebinding).
 */
export function checkOrigin(req: IncomingMessage, authOn: boolean, trustedOrigins: readonly string[] = []): void {
  const host = req.headers.host ?? '';
  if (!authOn && !isLoopbackHost(hostName(host))) {
    throw forbidden(`Host ${JSON.stringify(host)} is refused: without http.auth only loopback host names are served`, 'forbidden_host');
  }
  const origin = req.headers.origin;
  if (origin !== undefined) {
    const asked = origin.toLowerCase();
    // The page's own origin, or one the owner trusts (http.trusted_origins: the page behind a TLS reverse proxy).
    if (asked !== `http://${host}`.toLowerCase() && !trustedOrigins.some((o) => o.toLowerCase() === asked)) {
      throw forbidden(
        `requests from origin ${JSON.stringify(origin)} are refused: only same-origin pages, origins listed in http.trusted_origins and non-browser clients may use this API`,
        'forbidden_origin',
      );
    }
    return;
  }
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') {
    throw forbidden(`a ${site} browser request is refused: only same-origin pages and non-browser clients may use this API`, 'forbidden_origin');
  }
}

export class Authenticator {
  constructor(
    private readonly hearth: Hearth,
    readonly enabled: boolean,
  ) {}

  /** The principal of a request, or a 401. */
  principalOf(req: IncomingMessage): Principal {
    return this.authenticate(req).principal;
  }

  /** The principal of a request and the name of the token it came with (none when auth is off), or a 401. */
  authenticate(req: IncomingMessage): { principal: Principal; token?: string } {
    const header = req.headers.authorization;
    if (header === undefined || header.trim() === '') {
      if (!this.enabled) return { principal: { ...LOCAL_PRINCIPAL, roles: [...LOCAL_PRINCIPAL.roles] } };
      throw unauthorized(`this API needs a token: ${TOKEN_HINT}`);
    }
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!m) throw unauthorized(`the Authorization header must be \`Bearer <token>\`: ${TOKEN_HINT}`);
    const info = this.hearth.tokens.verify(m[1]);
    if (!info) throw unauthorized('the bearer token is not valid (unknown or revoked); `hearth token list` shows the tokens');
    return {
      principal: { id: info.principal, roles: this.hearth.policy.rolesOf(info.principal), ...(info.area ? { area: info.area } : {}) },
      token: info.name,
    };
  }
}

function unauthorized(message: string): HttpError {
  return new HttpError(401, 'unauthorized', message, {}, { 'www-authenticate': 'Bearer realm="hearth"' });
}
