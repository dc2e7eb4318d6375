import { isIPv4 } from 'node:net';

/**
 * True when `hostname` (as `URL.hostname` gives it) can only name this machine: `localhost` and
 * its subdomains (RFC 6761), 127.0.0.0/8 and `[::1]`. Plain http:// to such a host never leaves
 * the machine, so the API key cannot be read on the way.
 */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, '');
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (host === '[::1]') return true;
  return isIPv4(host) && host.startsWith('127.');
}
