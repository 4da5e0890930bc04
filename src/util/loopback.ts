// Whether a host name or address is reachable only from this machine: the HTTP door and the embedded
// broker may run without authentication only there.
import { isIPv4, isIPv6 } from 'node:net';

/** 127.0.0.0/8, ::1 (also as ::ffff:127.x.x.x and in brackets), localhost. */
export function isLoopbackHost(host: string): boolean {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h.endsWith('.')) h = h.slice(0, -1);
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (h.startsWith('::ffff:') && isIPv4(h.slice(7))) h = h.slice(7);
  if (isIPv4(h)) return h.startsWith('127.');
  if (isIPv6(h)) return h === '::1' || h === '0:0:0:0:0:0:0:1';
  return false;
}
