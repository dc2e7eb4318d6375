import type { Sql, TransactionSql } from '../../src/shared/infra/db.js';

/** A transaction that holds a lock until `release`, which runs `then` in it, then commits. */
interface Hold {
  release(then?: (tx: TransactionSql) => Promise<unknown>): Promise<void>;
}

async function holdWith(sql: Sql, lock: (tx: TransactionSql) => Promise<unknown>): Promise<Hold> {
  let locked!: () => void;
  const isLocked = new Promise<void>((resolve) => (locked = resolve));
  let release!: (then: ((tx: TransactionSql) => Promise<unknown>) | undefined) => void;
  const released = new Promise<((tx: TransactionSql) => Promise<unknown>) | undefined>((resolve) => (release = resolve));
  const done = sql.begin(async (tx) => {
    await lock(tx);
    locked();
    await (await released)?.(tx);
  });
  await isLocked;
  return {
    async release(then) {
      release(then);
      await done;
    },
  };
}

/**
 * Holds every import that reaches its insert into `imports`, so jobs stay in the worker's hands
 * for as long as the test needs; `release` runs `then` in the same transaction, then commits.
 * note: an import whose rows can only be new has copied them by then, and holds its account
 * (copy-new-rows.ts): `then` must not wait for the account (holdAccount does that).
 */
export function holdImports(sql: Sql): Promise<Hold> {
  // note: SHARE lets others read but blocks the worker's statement, which inserts into imports.
  return holdWith(sql, (tx) => tx`lock table imports in share mode`);
}

/**
 * Holds every import of `accountId` before it writes anything: its first statement reads the
 * account `for key share`, which this hold's `for update` blocks. `release` may delete the
 * account; the imports then find it gone.
 */
export function holdAccount(sql: Sql, accountId: string): Promise<Hold> {
  return holdWith(sql, (tx) => tx`select from accounts where id = ${accountId} for update`);
}

/**
 * Waits until at least `count` statements of this database wait for a lock (no time limit: the
 * test timeout bounds it). note: at least, as a statement of the service's own bookkeeping may
 * wait beside them.
 */
export async function waitForLockWaiters(sql: Sql, count: number): Promise<void> {
  for (;;) {
    const [row] = await sql<{ waiting: number }[]>`
      select count(*)::int as waiting from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`;
    if ((row?.waiting ?? 0) >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Waits until exactly `count` imports wait on the lock (no time limit: the test timeout bounds it).
 * note: found by the lock they wait for, not by their text: pg_stat_activity keeps only the first
 * kilobyte of a statement (track_activity_query_size), and the worker's insert into imports comes
 * late in its one statement.
 */
export async function waitForHeldImports(sql: Sql, count: number): Promise<void> {
  for (;;) {
    const [row] = await sql<{ held: number }[]>`
      select count(*)::int as held from pg_stat_activity a join pg_locks l on l.pid = a.pid and not l.granted
      where a.datname = current_database() and l.locktype = 'relation' and l.relation = 'imports'::regclass`;
    if (row?.held === count) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
