import postgres from 'postgres';
import type { Config } from './config.js';
import { parseDatabaseUrl } from './database-url.js';
import { connectWithNoDelay } from './db-socket.js';

const CONNECT_TIMEOUT_SEC = 2;

export type Sql = postgres.Sql;
export type TransactionSql = postgres.TransactionSql;
/** A piece of a statement: postgres.js nests fragments, their parameters included. */
export type Fragment = postgres.PendingQuery<postgres.Row[]>;

/** One pool per process. Query parameters are never logged (postgres.js keeps them out of errors' messages). */
export function createSql(config: Pick<Config, 'databaseUrl' | 'databasePoolMax'>, options: { max?: number } = {}): Sql {
  const { hosts } = parseDatabaseUrl(config.databaseUrl);
  const settings: Settings = {
    // note: the hosts as read here, not as postgres.js reads them: it splits each `host:port` at
    // its first colon, which turns `[::1]:5432` into the host `[`.
    host: hosts.map((h) => h.host),
    port: hosts.map((h) => h.port),
    max: options.max ?? config.databasePoolMax,
    // note: a dead server must not hang a request for the OS TCP timeout.
    connect_timeout: CONNECT_TIMEOUT_SEC,
    socket: connectWithNoDelay(CONNECT_TIMEOUT_SEC * 1000),
    idle_timeout: 60,
    onnotice: () => {},
    transform: { undefined: null },
  };
  return guardTransactions(postgres(config.databaseUrl, settings as unknown as postgres.Options<Record<string, never>>));
}

/**
 * Makes `sql.begin` give up a transaction whose connection is lost (the primary died, the
 * backend was terminated) instead of sending it anything more.
 *
 * note: postgres.js 3.4 goes on handing the statements of such a transaction, its ROLLBACK or
 * COMMIT included, to the lost connection. A write to its closed socket throws from a timer
 * (porsager/postgres#1154, #1208), which takes the whole process down; and once the pool has
 * reopened that connection for other queries, they run there, outside the transaction: rows
 * written without their import's record, and written again by the retry. So once the connection
 * is gone, the transaction's later statements are refused here, and neither ROLLBACK nor COMMIT
 * is sent: postgres.js would send them when the callback settles, so it is left unsettled, and
 * `begin` rejects with the loss at once. The server rolled the transaction back when the
 * connection went.
 */
function guardTransactions(sql: Sql): Sql {
  const begin = sql.begin.bind(sql) as (options: string, fn: (tx: TransactionSql) => unknown) => Promise<unknown>;
  const guarded = (optionsOrFn: string | ((tx: TransactionSql) => unknown), maybeFn?: (tx: TransactionSql) => unknown) => {
    const [options, fn] = typeof optionsOrFn === 'function' ? ['', optionsOrFn] : [optionsOrFn, maybeFn!];
    let lost: unknown;
    let abandon!: (error: unknown) => void;
    const abandoned = new Promise<never>((_, reject) => (abandon = reject));
    const run = begin(options, async (tx) => {
      try {
        const made = fn(refusingOnceLost(tx, () => lost));
        // note: postgres.js also takes an array of statements from the callback, and awaits them all.
        const result: unknown = await (Array.isArray(made) ? Promise.all(made) : made);
        if (lost === undefined) return result;
      } catch (error) {
        // note: a statement fails with its connection in the same turn of the event loop as
        // postgres.js notices the close, which rejects `run`; one turn later `lost` says which.
        await new Promise((resolve) => setImmediate(resolve));
        if (lost === undefined) throw error;
      }
      abandon(lost);
      return new Promise(() => {});
    });
    run.catch((error: unknown) => {
      lost ??= error;
    });
    return Promise.race([run, abandoned]);
  };
  sql.begin = guarded as Sql['begin'];
  return sql;
}

interface PendingQuery {
  handler?: ((query: PendingQuery) => void) & { debug?: unknown };
  reject(error: unknown): void;
}

/** The transaction's `sql`, whose statements are refused once `lostError()` is set. */
function refusingOnceLost(tx: TransactionSql, lostError: () => unknown): TransactionSql {
  // note: a statement is handed to its connection when it is awaited, not when it is written,
  // so the check goes into the handler postgres.js calls then.
  const guard = <T>(made: T): T => {
    const query = made as PendingQuery;
    const handler = made instanceof Promise ? query.handler : undefined;
    if (handler === undefined) return made;
    query.handler = Object.assign((pending: PendingQuery) => {
      const lost = lostError();
      if (lost === undefined) handler(pending);
      else pending.reject(lost);
    }, { debug: handler.debug });
    return made;
  };
  return new Proxy(tx, {
    apply: (target, thisArg, args: unknown[]) => guard(Reflect.apply(target, thisArg, args) as unknown),
    get: (target, property, receiver) => {
      const value: unknown = Reflect.get(target, property, receiver);
      if (property === 'unsafe' || property === 'file') return (...args: unknown[]) => guard((value as (...a: unknown[]) => unknown)(...args));
      if (property === 'savepoint') {
        return (nameOrFn: unknown, maybeFn?: (sp: TransactionSql) => unknown) => {
          // note: postgres.js counts the arguments to tell savepoint(fn) from savepoint(name, fn).
          const savepoint = value as (...args: unknown[]) => Promise<unknown>;
          const inner = (typeof nameOrFn === 'function' ? nameOrFn : maybeFn) as (sp: TransactionSql) => unknown;
          const wrapped = (sp: TransactionSql) => inner(refusingOnceLost(sp, lostError));
          return typeof nameOrFn === 'function' ? savepoint(wrapped) : savepoint(nameOrFn, wrapped);
        };
      }
      return value;
    },
  });
}

/**
 * A transaction whose work finished but whose COMMIT failed: `value` is what the work returned,
 * `cause` the COMMIT's error (which may or may not have rolled it back: a lost connection leaves
 * it unknown).
 */
export class CommitFailedError extends Error {
  override name = 'CommitFailedError';
  constructor(readonly value: unknown, options: { cause: unknown }) {
    super('the transaction\'s work finished, but its COMMIT failed', options);
  }
}

/**
 * `sql.begin(work)`, telling a failure of its COMMIT (CommitFailedError, with what the work
 * decided) from a failure of the work itself (thrown as it is), for a caller that must answer
 * the two differently.
 */
export async function beginTellingCommit<T>(sql: Sql, work: (tx: TransactionSql) => Promise<T>): Promise<T> {
  let finished: { value: T } | undefined;
  try {
    return (await sql.begin(async (tx) => {
      const value = await work(tx);
      finished = { value };
      return value;
    })) as T;
  } catch (error) {
    if (finished !== undefined) throw new CommitFailedError(finished.value, { cause: error });
    throw error;
  }
}

/**
 * note: postgres.js takes lists of hosts and ports and a socket factory, though its Options type
 * declares one host, one port and no factory.
 */
type Settings = Omit<postgres.Options<Record<string, never>>, 'host' | 'port'> & {
  host: string[];
  port: number[];
  socket: ReturnType<typeof connectWithNoDelay>;
};

/** Postgres error codes the service maps at the boundary. */
export const PG_UNIQUE_VIOLATION = '23505';
export const PG_DUPLICATE_DATABASE = '42P04';
