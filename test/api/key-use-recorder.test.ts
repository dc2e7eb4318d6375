import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyUseRecorder } from '../../src/api/auth/key-use-recorder.js';
import { createSql } from '../../src/shared/infra/db.js';
import { startTestService, type TestService } from '../support/test-service.js';

/** The keys' `last_used_at`, written in batches off the request path (docs/access.md#api-keys). */
describe('KeyUseRecorder', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ worker: false });
  });
  afterAll(async () => {
    await service?.close();
  });

  /** Three fresh keys of a new account, by id, and a reader of their last_used_at. */
  async function threeKeys() {
    const account = await service.createAccount();
    for (let i = 0; i < 3; i += 1) await service.createKey(account);
    const rows = await service.sql<{ id: string }[]>`select id from api_keys where account_id = ${account.id} order by id`;
    const lastUsed = async () =>
      (await service.sql<{ last_used_at: Date | null }[]>`select last_used_at from api_keys where account_id = ${account.id} order by id`).map((r) => r.last_used_at?.getTime() ?? null);
    return { ids: rows.map((r) => r.id), lastUsed };
  }

  it('writes nothing on the request path, then every key recorded in one flush; a key written within the minute keeps its time', async () => {
    const { ids, lastUsed } = await threeKeys();
    const recorder = new KeyUseRecorder(service.sql, service.deps.log);
    recorder.record(ids[0]!);
    recorder.record(ids[1]!);
    recorder.record(ids[0]!);
    expect(await lastUsed()).toEqual([null, null, null]);

    await recorder.flush();
    const [first, second, third] = await lastUsed();
    expect(first).not.toBeNull();
    expect(second).not.toBeNull();
    expect(third).toBeNull();

    recorder.record(ids[0]!);
    recorder.record(ids[2]!);
    await recorder.flush();
    const after = await lastUsed();
    expect(after[0]).toBe(first);
    expect(after[2]).not.toBeNull();
  });

  it('writes by itself within a second or so, and close() writes what is pending at once', async () => {
    const { ids, lastUsed } = await threeKeys();
    const recorder = new KeyUseRecorder(service.sql, service.deps.log);
    recorder.record(ids[0]!);
    await expect.poll(async () => (await lastUsed())[0], { timeout: 5_000, interval: 100 }).not.toBeNull();

    recorder.record(ids[1]!);
    await recorder.close();
    expect((await lastUsed())[1]).not.toBeNull();
  });

  it('never throws: a write that fails is logged and dropped', async () => {
    const { ids } = await threeKeys();
    const broken = createSql({ ...service.config, databaseUrl: 'postgres://postgres@127.0.0.1:1/none' }, { max: 1 });
    const recorder = new KeyUseRecorder(broken, service.deps.log);
    recorder.record(ids[0]!);
    await expect(recorder.flush()).resolves.toBeUndefined();
    expect(service.logs.some((line) => line['msg'] === 'could not record key use' && line['keys'] === 1)).toBe(true);
    await broken.end({ timeout: 1 });
  });
});
