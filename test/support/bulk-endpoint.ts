import type { Queue } from 'bullmq';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { ImportKind } from '../../src/shared/import/import-kinds.js';
import { createImportQueue } from '../../src/shared/import/import-queue.js';
import type { RowError } from '../../src/shared/rows/row-errors.js';
import { bearer } from './fixtures.js';
import { startTestService, type TestAccount, type TestService } from './test-service.js';

/** What a refused request must leave unchanged: the tables and the queue. */
export interface Snapshot {
  listings: number;
  machines: number;
  imports: number;
  jobs: number;
}

/** What one account has stored, by table. */
export interface Stored {
  listings: number;
  machines: number;
  /** imports that wrote (completed); a failed one, answered "nothing was written", is not counted */
  imports: number;
  idempotencyKeys: number;
}

/** A bulk import by `key`, with an `Idempotency-Key` when one is given. */
export function postBulk(service: TestService, kind: ImportKind, key: string, payload: object, idempotencyKey?: string): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = bearer(key);
  if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
  return service.request({ method: 'POST', url: `/v1/api/${kind}/bulk`, headers, payload });
}

/** A new account of the default tier with one key of the given scopes (default: listings:write). */
export async function newPartner(service: TestService, input: Parameters<TestService['createAccount']>[0] = {}, scopes?: string[]): Promise<{ account: TestAccount; key: string }> {
  const account = await service.createAccount(input);
  return { account, key: await service.createKey(account, scopes) };
}

export async function storedFor(service: TestService, account: TestAccount): Promise<Stored> {
  const [counts] = await service.sql<Stored[]>`
    select (select count(*)::int from listings where account_id = ${account.id}) as listings,
           (select count(*)::int from machines where account_id = ${account.id}) as machines,
           (select count(*)::int from imports where account_id = ${account.id} and state = 'completed') as imports,
           (select count(*)::int from idempotency_keys where account_id = ${account.id}) as "idempotencyKeys"`;
  return counts!;
}

/** A `{<kind>: [row]}` body of exactly `bytes` bytes, padded through a field the schema drops. */
export function bodyOfSize(kind: ImportKind, row: Record<string, unknown>, bytes: number): string {
  const unpadded = Buffer.byteLength(JSON.stringify({ [kind]: [{ ...row, padding: '' }] }));
  const body = JSON.stringify({ [kind]: [{ ...row, padding: 'x'.repeat(bytes - unpadded) }] });
  expect(Buffer.byteLength(body)).toBe(bytes);
  return body;
}

/** The field that tells a kind's rows apart in a test, and orders them. */
const LABEL_FIELD: Record<ImportKind, string> = { listings: 'title', machines: 'template_id' };

/**
 * Helpers for the tests of one bulk endpoint against a test service: partners with keys, posts,
 * a snapshot of everything a refused request must not change, and what an account has stored.
 * `close()` the kit before the service.
 */
export function bulkEndpoint(service: TestService, kind: ImportKind) {
  const path = `/v1/api/${kind}/bulk`;
  // note: a second handle on the service's own queue, to prove a refused request enqueued nothing
  const queue: Queue = createImportQueue(service.config, service.deps.redis);
  const request = (key: string, options: Omit<InjectOptions, 'method' | 'url'>) =>
    service.request({ ...options, method: 'POST', url: path, headers: { ...bearer(key), ...options.headers } });

  async function snapshot(): Promise<Snapshot> {
    const [counts] = await service.sql<Omit<Snapshot, 'jobs'>[]>`
      select (select count(*)::int from listings) as listings,
             (select count(*)::int from machines) as machines,
             (select count(*)::int from imports) as imports`;
    const jobs = Object.values(await queue.getJobCounts()).reduce((sum, n) => sum + n, 0);
    return { ...(counts as Omit<Snapshot, 'jobs'>), jobs };
  }

  return {
    path,
    partner(input: Parameters<TestService['createAccount']>[0] = {}, scopes?: string[]) {
      return newPartner(service, input, scopes);
    },
    post(key: string, payload: object, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
      return request(key, { headers, payload });
    },
    postRaw(key: string, body: string): Promise<LightMyRequestResponse> {
      return request(key, { headers: { 'content-type': 'application/json' }, payload: body });
    },
    snapshot,
    /** How much each table and the queue grew since `before`. */
    async growthSince(before: Snapshot): Promise<Snapshot> {
      const after = await snapshot();
      return {
        listings: after.listings - before.listings,
        machines: after.machines - before.machines,
        imports: after.imports - before.imports,
        jobs: after.jobs - before.jobs,
      };
    },
    /** Sends a request that must be refused: its status and body, and nothing written or queued. */
    async expectRefused(send: () => Promise<LightMyRequestResponse>, status: number, body: unknown): Promise<void> {
      const before = await snapshot();
      const res = await send();
      expect(res.statusCode).toBe(status);
      expect(res.json()).toEqual(body);
      expect(await snapshot()).toEqual(before);
    },
    /** A 201 that inserted `inserted` rows and skipped the rows of `errors`, reported in that order. */
    expectImported(res: LightMyRequestResponse, inserted: number, errors: RowError[]): void {
      expect(res.statusCode).toBe(201);
      const body = res.json<{ import_id: string }>();
      expect(body).toEqual({ inserted, skipped: errors.length, errors, import_id: expect.any(String) });
      // the import is named where it can be read
      expect(res.headers['location']).toBe(`/v1/api/imports/${body.import_id}`);
    },
    /** The labels (`title`, `template_id`) of the account's rows of this kind, in order. */
    async labelsOf(account: TestAccount): Promise<string[]> {
      const rows = await service.sql<{ label: string }[]>`
        select ${service.sql(LABEL_FIELD[kind])} as label from ${service.sql(kind)} where account_id = ${account.id} order by 1`;
      return rows.map((row) => row.label);
    },
    /** The account's `imports` records, as the worker wrote them. */
    importsOf(account: TestAccount) {
      return service.sql`
        select job_id, account_id, kind, request_id, inserted, skipped, errors from imports where account_id = ${account.id}`;
    },
    close: () => queue.close(),
  };
}

export type BulkEndpoint = ReturnType<typeof bulkEndpoint>;
export type StartedBulkEndpoint = BulkEndpoint & { service: TestService };

/** A test service of its own and the kit for one of its bulk endpoints; `close()` closes both. */
export async function startBulkEndpoint(kind: ImportKind): Promise<StartedBulkEndpoint> {
  const service = await startTestService();
  const kit = bulkEndpoint(service, kind);
  return {
    ...kit,
    service,
    async close() {
      await kit.close();
      await service.close();
    },
  };
}
