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
  // note: SHARE lets the worker read but blocks its insert into imports, the first write of a job.
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

/** Waits until exactly `count` imports wait on the lock (no time limit: the test timeout bounds it). */
export async function waitForHeldImports(sql: Sql, count: number): Promise<void> {
  for (;;) {
    const [row] = await sql<{ held: number }[]>`
      select count(*)::int as held from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock' and query like '%insert into imports%'`;
    if (row?.held === count) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
