import type { Sql, TransactionSql } from '../../shared/infra/db.js';

/**
 * How long one staging transaction stays open while batches keep coming, at most: what another
 * upload waits for the uploads' pool at worst. note: a transaction a batch cost an upload of a
 * million rows over a second (a BEGIN and a COMMIT waited for, a thousand times); a few every
 * second cost nothing measurable.
 */
export const STAGING_TRANSACTION_MAX_MS = 250;

/**
 * How long an open staging transaction waits for the next batch before it commits: what an upload
 * whose client has gone quiet holds a connection for. note: reading a batch from bytes already
 * received takes some 10 ms (1,000 rows, or 2 million characters); longer is waiting for the
 * client, which must not hold a connection.
 */
export const STAGING_IDLE_MS = 50;

/** Stages one batch within a transaction; returns what the caller wants of it. */
export type StageIn<Batch, Result> = (tx: TransactionSql, batch: Batch) => Promise<Result>;

/** The order to an open transaction's loop: stage a batch, or end (commit or roll back). */
type Order<Batch, Result> =
  | { type: 'stage'; batch: Batch; resolve: (result: Result) => void; reject: (error: unknown) => void }
  | { type: 'commit' }
  | { type: 'rollback' };

class RolledBack extends Error {}

/** One transaction of the uploads' pool, open across the batches given to it until told to end. */
class OpenTransaction<Batch, Result> {
  readonly openedAt = Date.now();
  /** settles with the transaction: resolves once it committed, rejects when it failed or rolled back */
  readonly ended: Promise<void>;
  private next: Order<Batch, Result> | undefined;
  private wake: (() => void) | undefined;
  private over: { error: unknown } | undefined;

  constructor(sql: Sql, stageIn: StageIn<Batch, Result>) {
    this.ended = sql.begin<void>(async (tx) => {
      // note: sent with the first batch's statements, not waited for on its own. Without waiting
      // for the commit to reach the disk: what is staged counts only once the acceptance commits,
      // and that commit, durable, makes every write before it durable too.
      const asynchronous = tx`set local synchronous_commit = off`.execute();
      for (;;) {
        const order = await this.nextOrder();
        if (order.type === 'commit') break;
        if (order.type === 'rollback') throw new RolledBack();
        try {
          order.resolve(await stageIn(tx, order.batch));
        } catch (error) {
          order.reject(error);
          throw error;
        }
      }
      await asynchronous;
    });
    // note: an order given after the transaction ended would wait forever: it is refused instead.
    this.ended.then(
      () => this.end(new Error('the staging transaction has committed')),
      (error: unknown) => this.end(error),
    );
  }

  stage(batch: Batch): Promise<Result> {
    return new Promise<Result>((resolve, reject) => this.give({ type: 'stage', batch, resolve, reject }));
  }

  commit(): Promise<void> {
    this.give({ type: 'commit' });
    return this.ended;
  }

  /** Rolls it back; settles once it has (never rejects). */
  async rollBack(): Promise<void> {
    this.give({ type: 'rollback' });
    await this.ended.catch(() => undefined);
  }

  private end(error: unknown): void {
    this.over = { error };
    if (this.next?.type === 'stage') this.next.reject(error);
    this.next = undefined;
  }

  private give(order: Order<Batch, Result>): void {
    if (this.over !== undefined) {
      if (order.type === 'stage') order.reject(this.over.error);
      return;
    }
    this.next = order;
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  private async nextOrder(): Promise<Order<Batch, Result>> {
    while (this.next === undefined) await new Promise<void>((resolve) => (this.wake = resolve));
    const order = this.next;
    this.next = undefined;
    return order;
  }
}

/**
 * Stages an upload's batches in as few transactions as keep every connection free while the
 * client is silent: a transaction stays open from batch to batch while they come one after
 * another (bytes already received), and commits once it is STAGING_TRANSACTION_MAX_MS old or when
 * no batch came for STAGING_IDLE_MS. One batch at a time: `stage` is awaited before the next.
 *
 * note: a commit the idle timer began and that failed is thrown by the next `stage` or by
 * `finish`: nothing staged is taken as kept before its commit succeeded.
 */
export class StagingTransactions<Batch, Result> {
  private open: OpenTransaction<Batch, Result> | undefined;
  private committing: Promise<void> = Promise.resolve();
  private idle: NodeJS.Timeout | undefined;

  constructor(
    private readonly sql: Sql,
    private readonly stageIn: StageIn<Batch, Result>,
    private readonly limits = { maxMs: STAGING_TRANSACTION_MAX_MS, idleMs: STAGING_IDLE_MS },
  ) {}

  async stage(batch: Batch): Promise<Result> {
    clearTimeout(this.idle);
    if (this.open !== undefined && Date.now() - this.open.openedAt >= this.limits.maxMs) this.commitOpen();
    await this.committing;
    this.open ??= new OpenTransaction(this.sql, this.stageIn);
    const result = await this.open.stage(batch);
    this.idle = setTimeout(() => this.commitOpen(), this.limits.idleMs);
    return result;
  }

  /** Commits what is open; resolves once everything staged is committed. */
  async finish(): Promise<void> {
    clearTimeout(this.idle);
    this.commitOpen();
    await this.committing;
  }

  /** Rolls back what is open, and waits for a commit under way; never rejects. */
  async abandon(): Promise<void> {
    clearTimeout(this.idle);
    const open = this.open;
    this.open = undefined;
    await Promise.all([open?.rollBack(), this.committing.catch(() => undefined)]);
  }

  private commitOpen(): void {
    const open = this.open;
    if (open === undefined) return;
    this.open = undefined;
    const committed = open.commit();
    // note: kept for the next `stage` or `finish`, which throw its failure; until then handled here
    committed.catch(() => undefined);
    this.committing = this.committing.then(() => committed);
    this.committing.catch(() => undefined);
  }
}
