// Where a client may be sent back with a code: https anywhere, http only to
// this machine (a desktop app's loopback listener, RFC 8252), or an app's own
// scheme; never a scheme a browser would run or read (javascript:, data:,
// file:). Compared exactly at sign-in: a redirect_uri that was not registered
// is refused on Hearth's page, and nothing is sent to it.
import { isLoopbackHost } from '../../util/loopback.js';

const REFUSED_SCHEMES = new Set(['javascript:', 'data:', 'file:', 'vbscript:', 'about:', 'blob:', 'ws:', 'wss:', 'ftp:', 'filesystem:']);
const MAX_URIS = 10;

/** The problem with one redirect URI, or undefined when it is acceptable. */
export function redirectUriProblem(uri: string): string | undefined {
  if (uri.length > 2000) return 'longer than 2000 characters';
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    return 'not an absolute URL';
  }
  if (u.hash) return 'has a fragment';
  if (REFUSED_SCHEMES.has(u.protocol)) return `the scheme ${u.protocol} is not allowed`;
  if (u.protocol === 'http:' && !isLoopbackHost(u.hostname)) return 'http is allowed only to this machine (127.0.0.1, [::1], localhost); use https';
  return undefined;
}

/** A client's redirect_uris, checked; `fail` makes the error to throw. */
export function checkRedirectUris(value: unknown, fail: (why: string) => Error): string[] {
  if (!Array.isArray(value) || !value.length) throw fail('redirect_uris must be a non-empty list of URLs');
  if (value.length > MAX_URIS) throw fail(`redirect_uris has ${value.length} entries; at most ${MAX_URIS}`);
  return value.map((v, i) => {
    if (typeof v !== 'string') throw fail(`redirect_uris[${i}] is not a string`);
    const problem = redirectUriProblem(v);
    if (problem) throw fail(`redirect_uris[${i}] ${JSON.stringify(v.slice(0, 100))}: ${problem}`);
    return v;
  });
}
