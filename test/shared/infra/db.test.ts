import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSql, type Sql } from '../../../src/shared/infra/db.js';
import { createTestDatabase, type TestDatabase } from '../../support/test-database.js';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A transaction whose connection is lost (its backend terminated, as when the primary dies).
 * note: postgres.js 3.4 kept handing the transaction's later statements, its ROLLBACK or COMMIT
 * included, to the lost connection: a write to its closed socket, thrown from a timer, took the
 * process down, and once the pool had reopened that connection for other queries the statements
 * ran there, outside the transaction.
 */
describe('createSql: a transaction whose connection is lost', () => {
  let database: TestDatabase;
  let admin: postgres.Sql;
  let sql: Sql;

  beforeAll(async () => {
    database = await createTestDatabase();
    admin = postgres(database.url, { max: 1, onnotice: () => {} });
    await admin`create table lost_tx (note text)`;
  });
  afterAll(async () => {
    await sql?.end({ timeout: 1 });
    await admin.end();
    await database.drop();
  });

  async function terminate(tx: postgres.TransactionSql): Promise<void> {
    const [row] = await tx<{ pid: number }[]>`select pg_backend_pid() as pid`;
    await admin`select pg_terminate_backend(${row!.pid})`;
  }

  it('rejects with the connection error when a statement was in flight, and the pool goes on', async () => {
    sql = createSql({ databaseUrl: database.url, databasePoolMax: 1 });
    const outcome = await sql
      .begin(async (tx) => {
        const [row] = await tx<{ pid: number }[]>`select pg_backend_pid() as pid`;
        await Promise.all([tx`select pg_sleep(5)`, pause(100).then(() => admin`select pg_terminate_backend(${row!.pid})`)]);
      })
      .catch((error: unknown) => error);
    expect(outcome).toMatchObject({ code: expect.stringMatching(/^(CONNECTION_CLOSED|57P01|ECONNRESET)$/) });
    // note: postgres.js keeps the server's last error on the connection and fails the next query
    // made on it with that error once (57P01 here); the one after goes through.
    const next = await sql`select 1 as n`.catch(() => sql`select 1 as n`);
    expect(next).toEqual([{ n: 1 }]);
    await sql.end({ timeout: 1 });
  });

  it('refuses the statements sent after the loss, and none of them runs on the reopened connection', async () => {
    sql = createSql({ databaseUrl: database.url, databasePoolMax: 1 });
    let later: unknown;
    const outcome = await sql
      .begin(async (tx) => {
        await tx`insert into lost_tx values ('in the transaction')`;
        await terminate(tx);
        // note: meanwhile the pool reopens the transaction's connection for another query.
        await pause(200);
        await sql`select 1`;
        later = await tx`insert into lost_tx values ('after the loss')`.catch((error: unknown) => error);
        return 'committed';
      })
      .catch((error: unknown) => error);
    expect(outcome).toMatchObject({ code: expect.stringMatching(/^(CONNECTION_CLOSED|57P01)$/) });
    for (let i = 0; i < 40 && later === undefined; i += 1) await pause(50);
    expect(later ?? 'never answered').toMatchObject({ code: expect.stringMatching(/^(CONNECTION_CLOSED|57P01)$/) });
    expect(await admin`select note from lost_tx`).toEqual([]);
    expect(await sql`select 1 as n`).toEqual([{ n: 1 }]);
    await sql.end({ timeout: 1 });
  });
});

describe('createSql: transactions as postgres.js runs them', () => {
  let database: TestDatabase;
  let sql: Sql;

  beforeAll(async () => {
    database = await createTestDatabase();
    sql = createSql({ databaseUrl: database.url, databasePoolMax: 2 });
    await sql`create table tx_shapes (n int)`;
  });
  afterAll(async () => {
    await sql.end({ timeout: 1 });
    await database.drop();
  });

  it('commits, rolls back on an error, runs an array of statements and savepoints', async () => {
    expect(await sql.begin(async (tx) => (await tx`insert into tx_shapes values (1) returning n`)[0])).toEqual({ n: 1 });
    await expect(
      sql.begin(async (tx) => {
        await tx`insert into tx_shapes values (2)`;
        await tx`insert into tx_shapes values (${'not a number'})`;
      }),
    ).rejects.toMatchObject({ code: '22P02' });
    const both = await sql.begin((tx) => [tx`insert into tx_shapes values (3)`, tx.unsafe('insert into tx_shapes values (4)')]);
    expect(both).toHaveLength(2);
    await sql.begin('isolation level serializable', async (tx) => {
      await tx`insert into tx_shapes values (5)`;
      await tx.savepoint(async (sp) => {
        await sp`insert into tx_shapes values (6)`;
        throw new Error('undo the savepoint');
      }).catch(() => undefined);
      await tx.savepoint('named', async (sp) => sp`insert into tx_shapes values (7)`);
    });
    expect((await sql<{ n: number }[]>`select n from tx_shapes order by n`).map((r) => r.n)).toEqual([1, 3, 4, 5, 7]);
  });
});
