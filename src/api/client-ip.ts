import { isIPv4, isIPv6 } from 'node:net';
import type { FastifyRequest } from 'fastify';

/**
 * The canonical text of an IP address, or undefined when `raw` is not one: IPv4 as it is (Node
 * refuses leading zeros, `010.1.1.1`), IPv6 lowercase and compressed (RFC 5952, as the WHATWG
 * URL parser writes it) without a zone id, and an IPv4-mapped IPv6 address as the IPv4 address
 * it carries. note: one client, one spelling, so no spelling is a fresh client to the lockout.
 */
export function canonicalIp(raw: string): string | undefined {
  if (raw.length > 64) return undefined;
  if (isIPv4(raw)) return raw;
  const address = raw.replace(/%.*$/, '');
  if (!isIPv6(address)) return undefined;
  const compressed = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(compressed);
  if (!mapped) return compressed;
  const high = parseInt(mapped[1]!, 16);
  const low = parseInt(mapped[2]!, 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

/**
 * The client's address: the one Fastify took from X-Forwarded-For under TRUST_PROXY, or the
 * socket's. A forwarded value that is not an IP address is ignored and the socket address
 * counts (docs/access.md#client-addresses), so a header can neither invent clients nor grow a Redis key.
 */
export function clientIp(request: FastifyRequest): string {
  return canonicalIp(request.ip) ?? canonicalIp(request.socket.remoteAddress ?? '') ?? 'unknown';
}

/**
 * Who the lockout counts: an IPv4 address, or the /64 network of an IPv6 address (a single
 * client is usually handed a whole /64 and can pick any address in it).
 */
export function lockoutSubject(ip: string): string {
  if (!ip.includes(':')) return ip;
  const [head = '', tail] = ip.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return `${canonicalIp(`${groups.slice(0, 4).join(':')}::`) ?? ip}/64`;
}
