// Where Hearth is, as an OAuth client sees it: the issuer and the /mcp
// resource are built from it, and tokens are bound to it. OAuth is served
// over HTTPS (a TLS reverse proxy in front) or on loopback only:
// - a request from this machine to a loopback host name: http://<Host>;
// - a request carrying `X-Forwarded-Proto: https` (the proxy's header):
//   https://<X-Forwarded-Host or Host>, but only when that origin is one the
//   owner listed in http.trusted_origins, so a forged header can name nothing
//   else. It is safe only behind the proxy: bind http.host to 127.0.0.1 so
//   nobody reaches Hearth around it (docs/mcp.md).
import type { IncomingMessage } from 'node:http';
import { isLoopbackHost } from '../../util/loopback.js';

const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v)?.split(',')[0]?.trim();

export type PublicUrl = { base: string } | { problem: string };

export function publicUrlOf(req: IncomingMessage, trustedOrigins: readonly string[]): PublicUrl {
  const host = req.headers.host ?? '';
  const proto = first(req.headers['x-forwarded-proto'])?.toLowerCase();
  if (proto === 'https') {
    const forwardedHost = first(req.headers['x-forwarded-host']) ?? host;
    const origin = `https://${forwardedHost}`.toLowerCase();
    if (trustedOrigins.some((o) => o.toLowerCase() === origin)) return { base: origin };
    return {
      problem: `the request says it came over HTTPS for ${origin}, which is not listed in http.trusted_origins; list the proxy's public origin there`,
    };
  }
  let hostName = '';
  try {
    hostName = new URL(`http://${host}`).hostname;
  } catch {
    return { problem: `the Host header ${JSON.stringify(host)} is not a host name` };
  }
  if (hostName && isLoopbackHost(hostName) && isLoopbackHost(req.socket.remoteAddress ?? '')) return { base: `http://${host}`.toLowerCase() };
  return {
    problem:
      'OAuth sign-in needs HTTPS off this machine: put Hearth behind a TLS reverse proxy that sends X-Forwarded-Proto: https and list its public origin in http.trusted_origins (docs/mcp.md), or use a pasted token',
  };
}
