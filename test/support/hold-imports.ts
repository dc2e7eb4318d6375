import type { Sql, TransactionSql } from '../../src/shared/infra/db.js';

/**
 * Holds every import that reaches its insert into `imports`, so jobs stay in the worker's hands
 * for as long as the test needs; `release` runs `then` in the same transaction, then commits.
 */
export async function holdImports(sql: Sql): Promise<{ release(then?: (tx: TransactionSql) => Promise<unknown>): Promise<void> }> {
  let locked!: () => void;
  const isLocked = new Promise<void>((resolve) => (locked = resolve));
  let release!: (then: ((tx: TransactionSql) => Promise<unknown>) | undefined) => void;
  const released = new Promise<((tx: TransactionSql) => Promise<unknown>) | undefined>((resolve) => (release = resolve));
  // note: SHARE lets others read but blocks the worker's statement, which inserts into imports.
  const done = sql.begin(async (tx) => {
    await tx`lock table imports in share mode`;
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
