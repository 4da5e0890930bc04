// Client ID Metadata Documents: a client whose client_id is an HTTPS URL is
// described by the JSON document at that URL. Hearth fetches it when an
// owner is asked to consent, bounded: HTTPS only, no redirects, 5 seconds,
// 64 KiB, and only to public addresses. A document URL is chosen by whoever
// starts a sign-in, so without the last rule anyone could make Hearth send
// requests into the house (the router, a camera's admin page): the name is
// resolved once, every address is checked, and the connection goes to the
// address that was checked (a second lookup cannot rebind it).
import { lookup } from 'node:dns/promises';
import { request } from 'node:https';
import { BlockList, isIP } from 'node:net';
import { OAuthError } from '../../auth/oauth.js';
import { checkRedirectUris } from './redirect-uris.js';

export const DOCUMENT_MAX_BYTES = 64 * 1024;
export const DOCUMENT_TIMEOUT_MS = 5000;

/** Addresses a client's document may not be fetched from: this machine, the private networks, link-local, and the reserved ranges. */
const NOT_PUBLIC = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 3],
] as const)
  NOT_PUBLIC.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 127],
  ['64:ff9b::', 96],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  NOT_PUBLIC.addSubnet(net, bits, 'ipv6');

/** Is this address on the public internet (not this machine, the house's networks or a reserved range)? */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (!family) return false;
  // An IPv4 address written as IPv6 (::ffff:10.0.0.1) is checked as the IPv4 address it is.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return !NOT_PUBLIC.check(mapped, 'ipv4');
  return !NOT_PUBLIC.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** A client_id that names a metadata document: an https URL with a path, no fragment, no credentials. */
export function isDocumentClientId(clientId: string): boolean {
  if (!clientId.startsWith('https://') || clientId.length > 2000) return false;
  try {
    const u = new URL(clientId);
    return u.pathname !== '/' && !u.hash && !u.username && !u.password;
  } catch {
    return false;
  }
}

export interface ClientDocument {
  clientId: string;
  name: string;
  redirectUris: string[];
}

/**
 * Fetch and check a client's metadata document (throws OAuthError invalid_client naming what is wrong).
 * `homeHosts`: host names the owner allows on private addresses (http.oauth_document_hosts).
 */
export async function fetchClientDocument(clientId: string, homeHosts: readonly string[] = []): Promise<ClientDocument> {
  const url = new URL(clientId);
  const bad = (why: string) => new OAuthError('invalid_client', `the client's metadata document ${clientId}: ${why}`);
  let addresses: Array<{ address: string; family: number }>;
  try {
    addresses = isIP(url.hostname.replace(/^\[|\]$/g, ''))
      ? [{ address: url.hostname.replace(/^\[|\]$/g, ''), family: isIP(url.hostname.replace(/^\[|\]$/g, '')) }]
      : await lookup(url.hostname, { all: true });
  } catch (err) {
    throw bad(`its host cannot be resolved (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const atHome = homeHosts.some((h) => h.toLowerCase() === url.hostname.toLowerCase());
  const refused = atHome ? undefined : addresses.find((a) => !isPublicAddress(a.address));
  if (!addresses.length || refused)
    throw bad(
      `its host resolves to ${refused?.address ?? 'nothing'}, not a public address; Hearth fetches client documents only from the internet (or from hosts listed in http.oauth_document_hosts)`,
    );
  // Each checked address in turn (localhost may be ::1 and 127.0.0.1), within one time bound for all.
  const deadline = Date.now() + DOCUMENT_TIMEOUT_MS;
  let text: string | undefined;
  let lastError: OAuthError | undefined;
  for (const address of addresses) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    try {
      text = await fetchFrom(url, address, left, bad);
      break;
    } catch (err) {
      lastError = err as OAuthError;
      if (!(err as { unreachable?: boolean }).unreachable) throw err;
    }
  }
  if (text === undefined) throw lastError ?? bad(`did not arrive within ${DOCUMENT_TIMEOUT_MS / 1000} s`);
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw bad('is not JSON');
  }
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw bad('is not a JSON object');
  const d = doc as Record<string, unknown>;
  if (d.client_id !== clientId) throw bad(`its client_id ${JSON.stringify(d.client_id)} is not its own URL`);
  if (d.token_endpoint_auth_method !== undefined && d.token_endpoint_auth_method !== 'none')
    throw bad(`token_endpoint_auth_method ${JSON.stringify(d.token_endpoint_auth_method)}: Hearth takes public clients with PKCE only ("none")`);
  const redirectUris = checkRedirectUris(d.redirect_uris, (why) => bad(why));
  const name = typeof d.client_name === 'string' && d.client_name.trim() ? d.client_name.trim().slice(0, 100) : url.hostname;
  return { clientId, name, redirectUris };
}

/** One GET of the document from one checked address; an error that says the address could not be reached is marked so. */
function fetchFrom(url: URL, to: { address: string; family: number }, timeoutMs: number, bad: (why: string) => OAuthError): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'GET',
        headers: { accept: 'application/json' },
        // Connect to the address checked, whatever a second lookup would say (Node 20 may ask for a list).
        lookup: ((_host: string, opts: { all?: boolean }, cb: (...args: unknown[]) => void) =>
          opts.all ? cb(null, [{ address: to.address, family: to.family }]) : cb(null, to.address, to.family)) as never,
      },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(
            bad(`answered HTTP ${res.statusCode}${res.statusCode && res.statusCode >= 300 && res.statusCode < 400 ? ' (redirects are not followed)' : ''}`),
          );
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > DOCUMENT_MAX_BYTES) {
            req.destroy();
            reject(bad(`is larger than ${DOCUMENT_MAX_BYTES} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        res.on('error', (err) => reject(bad(`could not be read (${err.message})`)));
      },
    );
    // One bound for the whole answer, however slowly it drips.
    const timer = setTimeout(() => req.destroy(bad(`did not arrive within ${DOCUMENT_TIMEOUT_MS / 1000} s`)), timeoutMs);
    req.on('close', () => clearTimeout(timer));
    req.on('error', (err) => {
      if (err instanceof OAuthError) return reject(err);
      const code = (err as NodeJS.ErrnoException).code ?? '';
      const failed = bad(`could not be fetched from ${to.address} (${code || err.message})`);
      reject(Object.assign(failed, { unreachable: ['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL'].includes(code) }));
    });
    req.end();
  });
}
