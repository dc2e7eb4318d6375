import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/** At most this many entries in a key's `allowed_ips` (docs/access.md#allowed-addresses). */
export const ALLOWED_IPS_MAX = 20;

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** A key's allowed addresses, parsed once when the key is loaded: what each request is matched against. */
export type AllowedIps = readonly (readonly [Address, number])[];

const PREFIX_LENGTH = /^(?:0|[1-9][0-9]{0,2})$/;

/**
 * The canonical text of one `allowed_ips` entry, or undefined when it is not an IPv4 or IPv6
 * address or CIDR block: an address (or a /32, /128 block) without a prefix length, a block as
 * its network (`203.0.113.9/24` -> `203.0.113.0/24`), IPv6 lowercase and compressed, and an
 * IPv4-mapped IPv6 address or block as the IPv4 one it carries, as client addresses are made
 * canonical (src/api/client-ip.ts). note: the address part is checked with Node's own strict
 * parser first: ipaddr.js also takes `010.1.1.1` (octal) and `1.2.3`, which a partner would not
 * mean; ipaddr.js does the parsing, masking and matching.
 */
export function canonicalIpEntry(raw: string): string | undefined {
  if (raw.length > 64) return undefined;
  const slash = raw.indexOf('/');
  const text = slash === -1 ? raw : raw.slice(0, slash);
  const prefix = slash === -1 ? undefined : raw.slice(slash + 1);
  const family = isIP(text);
  if (family === 0 || text.includes('%')) return undefined;
  const max = family === 4 ? 32 : 128;
  if (prefix !== undefined && (!PREFIX_LENGTH.test(prefix) || Number(prefix) > max)) return undefined;
  let address: Address = ipaddr.parse(text);
  let bits = prefix === undefined ? max : Number(prefix);
  if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
    address = (address as ipaddr.IPv6).toIPv4Address();
    bits -= 96;
  }
  const full = address.kind() === 'ipv4' ? 32 : 128;
  if (bits === full) return address.toString();
  const network = address.kind() === 'ipv4' ? ipaddr.IPv4.networkAddressFromCIDR(`${address.toString()}/${bits}`) : ipaddr.IPv6.networkAddressFromCIDR(`${address.toString()}/${bits}`);
  return `${network.toString()}/${bits}`;
}

/** Parses canonical entries (canonicalIpEntry's) for matching; null: any address. */
export function compileAllowedIps(entries: readonly string[] | null): AllowedIps | null {
  if (entries === null) return null;
  return entries.map((entry) => (entry.includes('/') ? ipaddr.parseCIDR(entry) : ([ipaddr.parse(entry), entry.includes(':') ? 128 : 32] as const)));
}

/**
 * Whether `ip`, a canonical client address (clientIp), is in `allowed`. note: an address the
 * service could not read (`unknown`) is in no list; an IPv4-mapped IPv6 address is matched as
 * the IPv4 address it carries (ipaddr.process), as its entries are stored.
 */
export function isAllowedFrom(allowed: AllowedIps, ip: string): boolean {
  if (!ipaddr.isValid(ip)) return false;
  const address = ipaddr.process(ip);
  const kind = address.kind();
  for (const [network, bits] of allowed) {
    if (network.kind() === kind && address.match(network, bits)) return true;
  }
  return false;
}
