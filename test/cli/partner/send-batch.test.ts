import { describe, expect, it } from 'vitest';
import type { AttemptResult } from '@bulk-import/client';
import { RateLimitPacer, retryAfterMs } from '../../../src/cli/partner/rate-limit.js';
import { DEFAULT_RETRY_POLICY, FatalError, sendBatch, type RetryPolicy } from '../../../src/cli/partner/send-batch.js';

type Scripted = AttemptResult | (() => AttemptResult);

function reply(status: number, body: unknown = {}, headers: Record<string, string> = {}): AttemptResult {
  return { type: 'response', status, body, headers: new Headers(headers), sentAt: Date.now(), tooLarge: false };
}
const refused: AttemptResult = { type: 'network', delivered: false, message: 'fetch failed: connect ECONNREFUSED' };
const dropped: AttemptResult = { type: 'network', delivered: true, message: 'fetch failed: other side closed' };
const created = (inserted: number, extra: Record<string, string> = {}) => reply(201, { inserted, skipped: 0, errors: [] }, extra);

/**
 * A scripted server: answers in order, bulk requests from `script` and reads (GET) from `reads`,
 * records what it was sent; sleeps are recorded, not slept, and move the clock on by as much.
 */
function harness(script: Scripted[], policy: Partial<RetryPolicy> = {}, reads: Scripted[] = []) {
  const keys: (string | undefined)[] = [];
  const paths: string[] = [];
  const sleeps: number[] = [];
  const notices: string[] = [];
  let clock = 1_000_000;
  const answer = (from: Scripted[]) => {
    const next = from.shift();
    if (next === undefined) throw new Error('unexpected extra request');
    return typeof next === 'function' ? next() : next;
  };
  const ctx = {
    client: {
      postBulk: async (_kind: string, _body: string, key: string | undefined) => {
        keys.push(key);
        return answer(script);
      },
      get: async (path: string) => {
        paths.push(path);
        return answer(reads);
      },
    },
    pacer: new RateLimitPacer(),
    policy: { ...DEFAULT_RETRY_POLICY, ...policy },
    sleep: async (ms: number) => {
      sleeps.push(ms);
      clock += ms;
    },
    notice: (message: string) => void notices.push(message),
    random: () => 0.5,
    now: () => clock,
  };
  return {
    ctx,
    keys,
    paths,
    sleeps,
    notices,
    /** sends a batch of `rows` rows (the body is not looked at) */
    send: (rows = 1) => sendBatch(ctx, 'listings', '{"listings":[]}', rows),
    dryRun: (rows = 1) => sendBatch(ctx, 'listings', '{"listings":[]}', rows, true),
  };
}

describe('sendBatch', () => {
  it('returns the 201 result with the server row errors', async () => {
    const error = { index: 1, reason: 'title: required', details: [{ field: 'title', code: 'required', message: 'required' }] };
    const h = harness([reply(201, { inserted: 1, skipped: 1, errors: [error] })]);
    expect(await h.send(2)).toEqual({ type: 'imported', inserted: 1, updated: 0, unchanged: 0, rowErrors: [error], replayed: false });
    expect(h.keys[0]).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('waits Retry-After on 429 and sends again, without using up an attempt', async () => {
    const h = harness([reply(429, { error: 'Rate limit exceeded (per-minute)' }, { 'retry-after': '3' }), reply(429, {}, { 'retry-after': '3' }), created(2)], { maxAttempts: 1 });
    expect(await h.send(2)).toMatchObject({ type: 'imported', inserted: 2 });
    expect(h.sleeps).toEqual([3000, 3000]);
    expect(h.notices[0]).toMatch(/429 Rate limit exceeded \(per-minute\); waiting 3.0 s/);
  });

  it('stops when the server asks to wait longer than --max-wait', async () => {
    const h = harness([reply(429, { error: 'Rate limit exceeded (per-day)' }, { 'retry-after': '3600' })], { maxWaitMs: 60_000 });
    await expect(h.send()).rejects.toThrow(FatalError);
  });

  it('retries 503 and refused connections with growing delays and the same Idempotency-Key', async () => {
    const h = harness([reply(503, { error: 'Service temporarily unavailable' }), refused, refused, created(5)]);
    expect(await h.send(5)).toMatchObject({ type: 'imported', inserted: 5 });
    expect(new Set(h.keys).size).toBe(1);
    expect(h.sleeps).toEqual([375, 750, 1500]);
  });

  it('honours the Retry-After of a 503 when it is longer than the backoff', async () => {
    const h = harness([reply(503, { error: 'Import workers unavailable; nothing was written' }, { 'retry-after': '30' }), created(1)]);
    await h.send();
    expect(h.sleeps).toEqual([30_000]);
  });

  it('caps the backoff at maxDelayMs', async () => {
    const h = harness([...Array.from({ length: 9 }, () => refused), created(1)], { maxAttempts: 10, maxDelayMs: 4_000 });
    await h.send();
    expect(Math.max(...h.sleeps)).toBe(3_000);
  });

  it('retries unknown outcomes (504, 500, dropped connection) with the same key, and reports a replay', async () => {
    const h = harness([reply(504, { error: 'Import is still running; check before retrying' }), dropped, reply(500), created(3, { 'idempotent-replayed': 'true' })]);
    expect(await h.send(3)).toEqual({ type: 'imported', inserted: 3, updated: 0, unchanged: 0, rowErrors: [], replayed: true });
    expect(h.keys).toHaveLength(4);
    expect(new Set(h.keys).size).toBe(1);
  });

  it('without idempotency: sends no key, still retries what was never written, never an unknown outcome', async () => {
    const h = harness([refused, reply(503), reply(504, { error: 'Import is still running; check before retrying' })], { idempotency: false });
    expect(await h.send()).toEqual({ type: 'unknown', reason: expect.stringMatching(/outcome unknown \(504 Import is still running/) });
    expect(h.keys).toEqual([undefined, undefined, undefined]);
    const dropping = harness([dropped], { idempotency: false });
    expect(await dropping.send()).toMatchObject({ type: 'unknown' });
  });

  it.each([401, 402, 403])('%d is fatal at once', async (status) => {
    const h = harness([reply(status, { error: 'Invalid API key' })]);
    await expect(h.send()).rejects.toMatchObject({ message: `${status} Invalid API key`, batchState: 'not-written' });
  });

  it.each([300, 301, 302, 303, 304, 307, 308])('%d (a redirect) is fatal at once: never retried, never counted as imported', async (status) => {
    const h = harness([reply(status, {}, { location: 'https://other.example/v1/api/listings/bulk' })]);
    await expect(h.send()).rejects.toMatchObject({
      message: `the server answered ${status} with a redirect to https://other.example/v1/api/listings/bulk; bulk-import never follows redirects (check --base-url)`,
      batchState: 'not-written',
    });
    expect(h.keys).toHaveLength(1);
    expect(h.sleeps).toEqual([]);
  });

  it('says a redirect points nowhere when it has no Location, and that the batch may be written after an unknown outcome', async () => {
    await expect(harness([reply(302)]).send()).rejects.toThrow('the server answered 302 with a redirect to nowhere;');
    await expect(harness([dropped, reply(307, {}, { location: '/elsewhere' })]).send()).rejects.toMatchObject({ batchState: 'unknown' });
  });

  describe('a server dry run', () => {
    it('sends no Idempotency-Key and takes the 200 with its counts', async () => {
      const h = harness([reply(200, { inserted: 1, updated: 2, unchanged: 3, skipped: 0, errors: [], dry_run: true })]);
      expect(await h.dryRun(6)).toEqual({ type: 'imported', inserted: 1, updated: 2, unchanged: 3, rowErrors: [], replayed: false });
      expect(h.keys).toEqual([undefined]);
    });

    it('retries a lost reply even without idempotency support: a dry run writes nothing', async () => {
      const h = harness([dropped, reply(200, { inserted: 1, skipped: 0, errors: [], dry_run: true })], { idempotency: false });
      expect(await h.dryRun()).toMatchObject({ type: 'imported', inserted: 1 });
    });

    it('stops at a 201: a server that does not know dry runs imported the batch', async () => {
      const h = harness([created(1), created(1)]);
      await expect(h.dryRun()).rejects.toMatchObject({ message: expect.stringContaining('does not know ?dry_run=true') });
      expect(h.keys).toHaveLength(1);
    });
  });

  it('rejects the batch on another 4xx, with the per-row errors of a 400', async () => {
    expect(await harness([reply(413, { error: 'Request body too large' })]).send()).toEqual({ type: 'rejected', reason: '413 Request body too large' });
    const errors = [{ index: 0, external_id: 'SKU-1', reason: 'title: required', details: [{ field: 'title', code: 'required', message: 'required' }] }];
    expect(await harness([reply(400, { error: 'no valid rows', errors })]).send()).toEqual({ type: 'rejected', reason: '400 no valid rows', rowErrors: errors });
    // an older server's entries without details still count, with none
    const bare = [{ index: 0, reason: 'title: required' }];
    expect(await harness([reply(400, { error: 'no valid rows', errors: bare })]).send()).toEqual({ type: 'rejected', reason: '400 no valid rows', rowErrors: [{ ...bare[0], details: [] }] });
  });

  it('gives up after maxAttempts, saying whether the batch may have been written', async () => {
    await expect(harness([refused, refused, refused], { maxAttempts: 3 }).send()).rejects.toMatchObject({ batchState: 'not-written', message: /gave up after 3 attempts/ });
    await expect(harness([dropped, refused, refused], { maxAttempts: 3 }).send()).rejects.toMatchObject({ batchState: 'unknown' });
  });

  describe('--max-retry-time', () => {
    it('ends a storm of 429s, which use up no attempt, before the next wait would pass it', async () => {
      const storm = Array.from({ length: 100 }, () => reply(429, { error: 'Rate limit exceeded (per-minute)' }, { 'retry-after': '3' }));
      const h = harness(storm, { maxRetryTimeMs: 10_000 });
      await expect(h.send()).rejects.toMatchObject({
        batchState: 'not-written',
        message: '429 Rate limit exceeded (per-minute): still failing after 9.0 s of retrying this batch; waiting 3.0 s more would pass --max-retry-time (10 s)',
      });
      expect(h.sleeps).toEqual([3_000, 3_000, 3_000]);
    });

    it('ends a storm of 503s within it however many --retries are left, and says when a lost reply may have written the batch', async () => {
      const storm = Array.from({ length: 100 }, () => reply(503, {}, { 'retry-after': '2' }));
      const h = harness(storm, { maxAttempts: 1_000, maxRetryTimeMs: 5_000 });
      await expect(h.send()).rejects.toMatchObject({ batchState: 'not-written', message: /^503 no error message: still failing after 4\.0 s/ });
      expect(h.sleeps).toEqual([2_000, 2_000]);
      const afterLoss = harness([dropped, ...storm], { maxAttempts: 1_000, maxRetryTimeMs: 5_000 });
      await expect(afterLoss.send()).rejects.toMatchObject({ batchState: 'unknown' });
    });

    it('counts from the first attempt of each batch, not of the run', async () => {
      const h = harness([reply(429, {}, { 'retry-after': '4' }), created(1), reply(429, {}, { 'retry-after': '4' }), created(1)], { maxRetryTimeMs: 5_000 });
      expect(await h.send()).toMatchObject({ type: 'imported' });
      expect(await h.send()).toMatchObject({ type: 'imported' });
      expect(h.sleeps).toEqual([4_000, 4_000]);
    });
  });

  describe('a 201 that cannot be believed is fatal, with the batch unaccounted for', () => {
    it.each<[string, unknown, string]>([
      ['more rows than were sent', { inserted: 55, skipped: 0, errors: [] }, "the server's 201 cannot be believed: inserted + skipped is 55, but 5 rows were sent"],
      ['an index outside the batch', { inserted: 4, skipped: 1, errors: [{ index: 5, reason: 'x' }] }, "the server's 201 cannot be believed: errors[0].index is 5, but the rows sent are 0 to 4"],
      ['not JSON', '<html>', "the server's 201 cannot be believed: it is not a JSON object"],
    ])('%s', async (_name, body, message) => {
      const h = harness([reply(201, body)]);
      await expect(h.send(5)).rejects.toMatchObject({ batchState: 'unknown', message });
      expect(h.keys).toHaveLength(1);
    });

    it('too large to read', async () => {
      const h = harness([{ type: 'response', status: 201, body: undefined, headers: new Headers(), sentAt: Date.now(), tooLarge: true }]);
      await expect(h.send(5)).rejects.toMatchObject({ batchState: 'unknown', message: "the server's 201 is larger than 16 MiB, more than any real reply; it was not read" });
    });

    it("and a dry run's 200 too, which wrote nothing", async () => {
      const h = harness([reply(200, { inserted: 5, skipped: 0, errors: [] })]);
      await expect(h.dryRun(5)).rejects.toMatchObject({ message: "the server's 200 to a dry run cannot be believed: it is not of the documented shape (dry_run: Invalid input: expected true)" });
    });
  });

  it("cuts the server's error text to 1,000 characters and writes out its controls", async () => {
    const outcome = await harness([reply(413, { error: `\u001b[2J${'x'.repeat(5_000)}` })]).send();
    expect(outcome).toEqual({ type: 'rejected', reason: `413 \\u001b[2J${'x'.repeat(996)}… (4004 more characters)` });
  });

  describe('an import answered 504: read at /v1/api/imports/{id} until it ends, never sent again blind', () => {
    const ID = '0b6f2c1e-3d4a-4f8e-9c7f-5a1e0d9b8c76';
    const IMPORT_PATH = `v1/api/imports/${ID}`;
    const stillRunning = reply(504, { error: 'Import is still running; check before retrying', request_id: 'req-1', import_id: ID });
    /** The import as GET /v1/api/imports/{id} answers it: 3 listings received. */
    const importReply = (state: string, rows: Record<string, number> = {}, extra: Record<string, unknown> = {}) => {
      const counts = { received: 3, processed: 3, inserted: 0, updated: 0, unchanged: 0, skipped: 0, ...rows };
      const times = { created_at: '2026-11-24T02:00:00.120Z', started_at: '2026-11-24T02:00:00.134Z', finished_at: state === 'running' ? null : '2026-11-24T02:01:10.161Z' };
      return reply(200, { id: ID, kind: 'listings', source: 'request', state, ...times, rows: counts, error_count: counts.skipped, ...extra });
    };
    const rowError = (index: number) => ({ index, reason: 'title: required', details: [{ field: 'title', code: 'required', message: 'required' }] });
    const errorsPage = (data: unknown[], hasMore = false) => reply(200, { data, has_more: hasMore });

    it('completed: counts as its 201 would have, with its failed rows from /errors, every page', async () => {
      const h = harness([stillRunning], {}, [
        importReply('running', { processed: 1, skipped: 1 }),
        importReply('completed', { inserted: 1, skipped: 2 }),
        errorsPage([rowError(0)], true),
        errorsPage([rowError(2)]),
      ]);
      expect(await h.send(3)).toEqual({ type: 'imported', inserted: 1, updated: 0, unchanged: 0, rowErrors: [rowError(0), rowError(2)], replayed: false });
      expect(h.keys).toHaveLength(1);
      expect(h.paths).toEqual([IMPORT_PATH, IMPORT_PATH, `${IMPORT_PATH}/errors?limit=1000`, `${IMPORT_PATH}/errors?limit=1000&starting_after=0`]);
      expect(h.sleeps).toEqual([1_000, 2_000]);
      expect(h.notices).toEqual([
        `504 Import is still running; check before retrying: watching import ${ID} until it ends (at most 600.0 s)`,
        `import ${ID} completed: its rows are counted once, as it wrote them`,
      ]);
    });

    it('failed: nothing was written, so the batch is sent again with the same key, as after a 503', async () => {
      const h = harness([stillRunning, created(3)], {}, [importReply('failed', { processed: 0 })]);
      expect(await h.send(3)).toMatchObject({ type: 'imported', inserted: 3, replayed: false });
      expect(h.keys).toHaveLength(2);
      expect(new Set(h.keys).size).toBe(1);
      expect(h.sleeps).toEqual([1_000, 375]);
      expect(h.notices[1]).toMatch(new RegExp(`attempt 1 of 8 failed \\(504 .*; import ${ID} then failed: nothing was written\\); retrying`));
    });

    it('reads on through a 404 (its record not written yet), a lost reply and a 429', async () => {
      const h = harness([stillRunning], {}, [
        reply(404, { error: 'Import not found' }),
        dropped,
        reply(429, { error: 'Rate limit exceeded (per-minute)' }, { 'retry-after': '3' }),
        importReply('completed', { inserted: 3 }),
      ]);
      expect(await h.send(3)).toMatchObject({ type: 'imported', inserted: 3, rowErrors: [] });
      expect(h.keys).toHaveLength(1);
      // no failed rows: /errors is not read
      expect(h.paths).toEqual([IMPORT_PATH, IMPORT_PATH, IMPORT_PATH, IMPORT_PATH]);
      expect(h.sleeps).toEqual([1_000, 2_000, 375, 3_000]);
    });

    it('without idempotency too: the import says what became of the batch', async () => {
      const h = harness([stillRunning], { idempotency: false }, [importReply('completed', { inserted: 3 })]);
      expect(await h.send(3)).toMatchObject({ type: 'imported', inserted: 3 });
      expect(h.keys).toEqual([undefined]);
    });

    it.each<[string, Partial<RetryPolicy>]>([
      ['--max-watch', { maxWatchMs: 10_000 }],
      ['--max-retry-time', { maxRetryTimeMs: 10_000 }],
    ])('stops at %s with the batch unaccounted for, naming the import to check', async (limit, policy) => {
      const h = harness([stillRunning], policy, Array.from({ length: 4 }, () => importReply('running')));
      await expect(h.send(3)).rejects.toMatchObject({
        batchState: 'unknown',
        message: `import ${ID} is still running after 10.0 s of watching (${limit}); check it with "bulk-import imports show ${ID}" before sending these rows again`,
      });
      expect(h.sleeps).toEqual([1_000, 2_000, 4_000, 3_000]);
      expect(h.keys).toHaveLength(1);
    });

    it('says so when the import never became readable (404) before --max-watch', async () => {
      const h = harness([stillRunning], { maxWatchMs: 3_000 }, [reply(404, { error: 'Import not found' }), reply(404, { error: 'Import not found' })]);
      await expect(h.send(3)).rejects.toMatchObject({
        batchState: 'unknown',
        message: `import ${ID} still read 404 (not recorded yet) after 3.0 s of watching (--max-watch); check it with "bulk-import imports show ${ID}" before sending these rows again`,
      });
    });

    it.each<[string, AttemptResult[], string]>([
      ['another import', [importReply('completed', { inserted: 3 }, { kind: 'machines' })], `it describes import ${ID} of 3 machines, not the 3 listings of this batch`],
      ['counts that do not add up', [importReply('completed', { inserted: 1 })], 'inserted + updated + unchanged + skipped is 1, but 3 rows were sent'],
      ['a failed row listed twice', [importReply('completed', { inserted: 1, skipped: 2 }), errorsPage([rowError(1), rowError(1)])], 'row 1 comes after row 1'],
      ['a cancelled bulk request', [importReply('cancelled')], 'it reads cancelled, which a bulk request never is'],
      ['not an import', [reply(200, { id: ID })], 'it is not of the documented shape (kind: Invalid option: expected one of "machines"|"listings")'],
    ])('does not believe %s: the batch is unaccounted for', async (_name, reads, problem) => {
      const h = harness([stillRunning], {}, reads);
      await expect(h.send(3)).rejects.toMatchObject({ batchState: 'unknown', message: expect.stringContaining(problem) });
      expect(h.keys).toHaveLength(1);
    });
  });

  it('waits for the next minute window when the quota headers say it is used up', async () => {
    const limits = (remaining: number) => ({ 'x-ratelimit-limit-minute': '300', 'x-ratelimit-remaining-minute': String(remaining) });
    const h = harness([created(1, limits(299))]);
    await h.send();
    expect(h.sleeps).toEqual([]);
    // A second batch on the same pacer, after the quota ran out.
    h.ctx.pacer.observe(Date.now(), new Headers(limits(0)));
    const next = harness([created(1, limits(299))]);
    next.ctx.pacer = h.ctx.pacer;
    await next.send();
    expect(next.sleeps).toHaveLength(1);
    expect(next.sleeps[0]).toBeGreaterThan(55_000);
    expect(next.sleeps[0]).toBeLessThanOrEqual(61_000);
  });
});

describe('RateLimitPacer', () => {
  const headers = (limit: number, remaining: number) => new Headers({ 'x-ratelimit-limit-minute': String(limit), 'x-ratelimit-remaining-minute': String(remaining) });

  it('does not wait while quota remains, or when it cannot know the window start', () => {
    const now = 1_000_000;
    const pacer = new RateLimitPacer(() => now);
    pacer.observe(now, headers(10, 5));
    expect(pacer.delayBeforeNext()).toBe(0);
    pacer.observe(now, headers(10, 0));
    // the window was opened by someone else: the next request's 429 will say how long
    expect(pacer.delayBeforeNext()).toBe(0);
  });

  it('waits until a minute after the request that opened the window', () => {
    let now = 1_000_000;
    const pacer = new RateLimitPacer(() => now);
    pacer.observe(now, headers(3, 2));
    now += 10_000;
    pacer.observe(now, headers(3, 1));
    pacer.observe(now, headers(3, 0));
    expect(pacer.delayBeforeNext()).toBe(51_000);
    now += 51_000;
    expect(pacer.delayBeforeNext()).toBe(0);
  });

  it('sees a new window when the remaining count goes up', () => {
    let now = 1_000_000;
    const pacer = new RateLimitPacer(() => now);
    pacer.observe(now, headers(10, 1));
    now += 5_000;
    pacer.observe(now, headers(10, 3));
    pacer.observe(now, headers(10, 0));
    expect(pacer.delayBeforeNext()).toBe(61_000);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(retryAfterMs(new Headers({ 'retry-after': '7' }))).toBe(7_000);
    expect(retryAfterMs(new Headers({ 'retry-after': new Date(10_000).toUTCString() }), 4_000)).toBe(6_000);
    expect(retryAfterMs(new Headers({ 'retry-after': 'soon' }))).toBeUndefined();
    expect(retryAfterMs(new Headers())).toBeUndefined();
  });
});
