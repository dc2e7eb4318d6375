import { isIPv6 } from 'node:net';

/** One `host[:port]` of a PostgreSQL URL; an IPv6 address without its brackets. */
export interface DatabaseHost {
  host: string;
  port: number;
}

export interface DatabaseUrl {
  /** in the order the URL lists them, which is the order they are tried in */
  hosts: DatabaseHost[];
  /** the database name, decoded; '' when the URL names none (PostgreSQL then uses the user name) */
  database: string;
}

/** What postgres.js accepts; anything else would stop the process only when the pool is created. */
const TARGET_SESSION_ATTRS = ['read-write', 'read-only', 'primary', 'standby', 'prefer-standby'];

/** scheme, authority (up to the first / ? or #), then path, query and fragment */
const URL_PARTS = /^(postgres(?:ql)?):\/\/([^/?#]*)(.*)$/is;
const HOST_ENTRY = /^(?:\[([^\]]*)\]|([A-Za-z0-9._-]+))(?::(\d{1,5}))?$/;
const DEFAULT_PORT = 5432;

/**
 * note: messages never quote the URL or a part of it: a password holding an unencoded `/`, `?`
 * or `@` would otherwise end up in the log of a process that refused to start.
 */
export class DatabaseUrlError extends Error {
  override name = 'DatabaseUrlError';
}

/**
 * Reads a `postgres://` or `postgresql://` URL as libpq writes it:
 * `postgres://user:password@host1:5432,[::1]:5433/database?target_session_attrs=primary`.
 *
 * note: WHATWG `new URL` refuses an authority with several hosts, so the hosts are read here and
 * only the rest (user, path, query) goes through `new URL`, with the first host alone.
 */
export function parseDatabaseUrl(raw: string): DatabaseUrl {
  const parts = URL_PARTS.exec(raw.trim());
  if (!parts) throw new DatabaseUrlError('must be a postgres:// or postgresql:// URL');
  const authority = parts[2]!;
  const at = authority.lastIndexOf('@');
  const userInfo = at === -1 ? '' : authority.slice(0, at);
  const entries = authority.slice(at + 1).split(',');
  if (entries.length === 1 && entries[0] === '') throw new DatabaseUrlError('name at least one host (host[:port], several separated by commas)');
  const hosts = entries.map((entry, index) => parseHost(entry, index, entries.length));

  let rest: URL;
  try {
    rest = new URL(`postgres://${userInfo === '' ? '' : `${userInfo}@`}${entries[0]!}${parts[3]!}`);
    decodeURIComponent(rest.username);
    decodeURIComponent(rest.password);
  } catch {
    throw new DatabaseUrlError('the user, password, database or parameters are not a valid URL (percent-encode / ? # @ : and % in them)');
  }
  let database: string;
  try {
    database = decodeURIComponent(rest.pathname.replace(/^\//, ''));
  } catch {
    throw new DatabaseUrlError('the database name is not validly percent-encoded');
  }
  const attrs = rest.searchParams.get('target_session_attrs');
  if (attrs !== null && !TARGET_SESSION_ATTRS.includes(attrs)) {
    throw new DatabaseUrlError(`target_session_attrs must be one of ${TARGET_SESSION_ATTRS.join(', ')}`);
  }
  return { hosts, database };
}

function parseHost(entry: string, index: number, count: number): DatabaseHost {
  const which = count === 1 ? 'the host' : `host ${index + 1} of ${count}`;
  const match = HOST_ENTRY.exec(entry);
  const [, ipv6, name, port] = match ?? [];
  if (!match || (ipv6 !== undefined && !isIPv6(ipv6))) {
    throw new DatabaseUrlError(`${which} is not host[:port] or [IPv6 address][:port]`);
  }
  const portNumber = port === undefined ? DEFAULT_PORT : Number(port);
  if (portNumber < 1 || portNumber > 65_535) throw new DatabaseUrlError(`${which} has a port outside 1-65535`);
  return { host: ipv6 ?? name!, port: portNumber };
}

/** The same URL (every host, user and parameter) naming another database. */
export function withDatabase(raw: string, database: string): string {
  parseDatabaseUrl(raw);
  const [, scheme, authority, rest] = URL_PARTS.exec(raw.trim())!;
  const query = /[?#].*$/s.exec(rest!)?.[0] ?? '';
  return `${scheme}://${authority}/${encodeURIComponent(database)}${query}`;
}
