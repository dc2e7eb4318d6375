import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/shared/errors/api-error.js';
import { transferableSymbol, valueSymbol } from 'piscina';
import prepareInThread, { PREPARE_THREAD_NICENESS } from '../../../src/api/import/prepare-thread.js';
import { ROW_COLUMNS } from '../../../src/shared/rows/row-columns.js';
import { ImportPreparer, DEFAULT_MAX_QUEUE, LARGE_FROM_BYTES } from '../../../src/api/import/import-preparer.js';
import { prepareImport, type PrepareOutcome, type PreparedImport } from '../../../src/api/import/prepare-import.js';
import { requestHash } from '../../../src/api/import/request-hash.js';
import { isImportRefusal } from '../../../src/api/import/import-refusal.js';
import { validListing, validMachine } from '../../support/fixtures.js';

/** `{"listings": [...]}` of at least `bytes` bytes: valid rows with long descriptions, and one invalid row. */
function largeListingsBody(bytes: number): Buffer {
  const rows: object[] = [validListing({ price_cents: -1 })];
  while (Buffer.byteLength(JSON.stringify({ listings: rows })) < bytes) rows.push(validListing({ description: 'd'.repeat(8_000) }));
  return Buffer.from(JSON.stringify({ listings: rows }));
}

/** What a refusal or an acceptance looks like, with the hash as hex, to compare two outcomes. */
function comparable(outcome: PrepareOutcome) {
  if (isImportRefusal(outcome)) return outcome;
  const { rows, hash, ...rest } = outcome;
  return { ...rest, rows: Buffer.from(rows).toString('utf8'), hash: hash && Buffer.from(hash).toString('hex') };
}

/** How many times the event loop turned while `work` ran: 0 means it held the loop all along. */
async function loopTurnsDuring(work: () => Promise<unknown>): Promise<number> {
  let turns = 0;
  let done = false;
  const turn = () => {
    if (done) return;
    turns += 1;
    setImmediate(turn);
  };
  setImmediate(turn);
  await work();
  done = true;
  return turns;
}

describe('ImportPreparer (bulk bodies read off the event loop)', () => {
  const threaded = new ImportPreparer(2);
  const inline = new ImportPreparer(0);
  afterAll(async () => {
    await threaded.close();
  });

  const large = largeListingsBody(2 * LARGE_FROM_BYTES);
  const cases: [string, Buffer][] = [
    ['a large body with a refused row', large],
    ['bytes that are not UTF-8', Buffer.concat([large.subarray(0, 100), Buffer.from([0xc3, 0x28]), Buffer.alloc(LARGE_FROM_BYTES, 0x20)])],
    ['a prototype-poisoning key', Buffer.from(`{"listings": [], "__proto__": {"x": 1}, "pad": "${'p'.repeat(LARGE_FROM_BYTES)}"}`)],
    ['a constructor.prototype key', Buffer.from(`{"constructor": {"prototype": {"x": 1}}, "pad": "${'p'.repeat(LARGE_FROM_BYTES)}"}`)],
    ['JSON cut short', large.subarray(0, large.length - 10)],
    ['too many rows', Buffer.from(JSON.stringify({ listings: Array.from({ length: 1_001 }, () => validListing({ description: 'd'.repeat(600) })) }))],
    ['no valid row', Buffer.from(JSON.stringify({ listings: Array.from({ length: 200 }, () => validListing({ currency: 'XXX', description: 'd'.repeat(3_000) })) }))],
  ];

  it.each(cases)('gives on a thread exactly what it gives inline: %s', async (_name, body) => {
    expect(body.length).toBeGreaterThanOrEqual(LARGE_FROM_BYTES);
    const expected = comparable(prepareImport({ kind: 'listings', update: 'replace', withHash: true }, body));
    // note: a copy each, as the threaded run moves its body to the thread.
    expect(comparable(await threaded.prepare({ kind: 'listings', update: 'replace', withHash: true }, Buffer.from(body)))).toEqual(expected);
    expect(comparable(await inline.prepare({ kind: 'listings', update: 'replace', withHash: true }, Buffer.from(body)))).toEqual(expected);
  });

  it('refuses every kind of broken body as the framework parser did, and tells no JSON from refused rows', () => {
    const json = { refused: 'invalid-json' };
    expect(prepareImport({ kind: 'listings', update: 'replace', withHash: false }, Buffer.alloc(0))).toEqual(json);
    expect(prepareImport({ kind: 'listings', update: 'replace', withHash: false }, cases[1]![1])).toEqual(json);
    expect(prepareImport({ kind: 'listings', update: 'replace', withHash: false }, cases[2]![1])).toEqual(json);
    expect(prepareImport({ kind: 'listings', update: 'replace', withHash: false }, cases[3]![1])).toEqual(json);
    expect(prepareImport({ kind: 'listings', update: 'replace', withHash: false }, Buffer.from('{"machines": []}'))).toEqual({ refused: 'no-envelope', kind: 'listings' });
  });

  it('encodes the valid rows, reports the others by index and hashes the body only when asked', async () => {
    const outcome = await threaded.prepare({ kind: 'listings', update: 'replace', withHash: true }, Buffer.from(large));
    assertOk(outcome);
    expect(outcome.rowsFormat).toBe('copy');
    const rows = Buffer.from(outcome.rows).toString('utf8').split('\n').slice(0, -1);
    expect(rows[0]!.split('\t')).toHaveLength(Object.keys(ROW_COLUMNS.listings).length);
    expect(outcome).toMatchObject({ total: rows.length + 1, rowCount: rows.length, errors: [{ index: 0, reason: expect.stringContaining('price_cents') }] });
    expect(Buffer.from(outcome.hash!)).toEqual(requestHash({ route: 'bulk', kind: 'listings', update: 'replace' }, large));
    const unhashed = await threaded.prepare({ kind: 'listings', update: 'replace', withHash: false }, Buffer.from(large));
    assertOk(unhashed);
    expect(unhashed.hash).toBeUndefined();
  });

  it.each([
    ['an import of the usual size', Buffer.from(JSON.stringify({ listings: Array.from({ length: 200 }, () => validListing({ description: 'd'.repeat(600) })) }))],
    ['a large body', large],
  ])('prepares %s on a thread, where the event loop goes on turning', async (_name, body) => {
    expect(await loopTurnsDuring(() => inline.prepare({ kind: 'listings', update: 'replace', withHash: false }, Buffer.from(body)))).toBe(0);
    // note: a thread's answer can be waiting already when a starved event loop next runs (two
    // cores, a whole CI run beside it): it then resolves before the loop's first turn. A few
    // tries tell a thread that leaves the loop free from an inline preparation, which never does.
    let turns = 0;
    for (let tries = 0; tries < 5 && turns === 0; tries += 1) turns = await loopTurnsDuring(() => threaded.prepare({ kind: 'listings', update: 'replace', withHash: false }, Buffer.from(body)));
    expect(turns).toBeGreaterThan(0);
  });

  it('prepares a body of the usual size that arrives alone inline, and a large one on a thread even then', async () => {
    const usual = Buffer.from(JSON.stringify({ listings: Array.from({ length: 200 }, () => validListing({ description: 'd'.repeat(600) })) }));
    const expected = comparable(await inline.prepare({ kind: 'listings', update: 'replace', withHash: true }, Buffer.from(usual)));
    let alone: PrepareOutcome | undefined;
    expect(await loopTurnsDuring(async () => (alone = await threaded.prepare({ kind: 'listings', update: 'replace', withHash: true }, Buffer.from(usual), { alone: true })))).toBe(0);
    expect(comparable(alone!)).toEqual(expected);
    let turns = 0;
    for (let tries = 0; tries < 5 && turns === 0; tries += 1) turns = await loopTurnsDuring(() => threaded.prepare({ kind: 'listings', update: 'replace', withHash: false }, Buffer.from(large), { alone: true }));
    expect(turns).toBeGreaterThan(0);
  });

  it('moves the encoded rows and the hash back from the thread instead of copying them', () => {
    const small = Buffer.from(JSON.stringify({ machines: [validMachine()] }));
    const moved = prepareInThread({ kind: 'machines', update: 'replace', withHash: true, bytes: small, lowPriority: false }) as unknown as Record<symbol, unknown>;
    const outcome = moved[valueSymbol] as PreparedImport;
    expect(outcome).toMatchObject({ total: 1, rowCount: 1, rowsFormat: 'copy' });
    expect(moved[transferableSymbol]).toEqual([outcome.rows.buffer, outcome.hash!.buffer]);
    // a refusal carries nothing to move
    expect(prepareInThread({ kind: 'machines', update: 'replace', withHash: false, bytes: Buffer.from('{'), lowPriority: false })).toEqual({ refused: 'invalid-json' });
  });

  it.runIf(process.platform === 'linux')('runs the threads of large bodies at a lower priority than the event loop, and the others at its own', async () => {
    const niceness = (path: string) => Number(readFileSync(path, 'utf8').split(') ')[1]!.split(' ')[16]);
    const loweredThreads = () => readdirSync('/proc/self/task').filter((tid) => niceness(`/proc/self/task/${tid}/stat`) === PREPARE_THREAD_NICENESS).length;
    const fresh = new ImportPreparer(2);
    try {
      const before = loweredThreads();
      await fresh.prepare({ kind: 'machines', update: 'replace', withHash: false }, Buffer.from(JSON.stringify({ machines: [validMachine()] })));
      expect(loweredThreads()).toBe(before);
    } finally {
      await fresh.close();
    }
    await threaded.prepare({ kind: 'listings', update: 'replace', withHash: false }, Buffer.from(large));
    const threads = readdirSync('/proc/self/task').map((tid) => niceness(`/proc/self/task/${tid}/stat`));
    expect(niceness('/proc/self/stat')).toBe(0);
    // note: two threads at most (maxThreads: 2), one at least once a task has run.
    const lowered = threads.filter((n) => n === PREPARE_THREAD_NICENESS).length;
    expect(lowered).toBeGreaterThanOrEqual(1);
    expect(lowered).toBeLessThanOrEqual(2);
  });
});

describe('ImportPreparer: the queue of bodies waiting for a thread is bounded', () => {
  const large = largeListingsBody(LARGE_FROM_BYTES + 1);

  it('refuses a body that finds the queue full with the 503 "Service overloaded, retry shortly" (Retry-After: 5), and prepares the others', async () => {
    const preparer = new ImportPreparer(1, { maxQueue: 2 });
    try {
      // One thread: one body on it, two waiting, and the rest refused at once.
      const settled = await Promise.allSettled(Array.from({ length: 8 }, () => preparer.prepare({ kind: 'listings', update: 'replace', withHash: false }, Buffer.from(large))));
      const refused = settled.filter((s) => s.status === 'rejected').map((s) => s.reason as unknown);
      expect(refused.length).toBeGreaterThanOrEqual(8 - 3);
      for (const error of refused) {
        expect(error).toBeInstanceOf(ApiError);
        expect(error).toMatchObject({ statusCode: 503, body: { error: 'Service overloaded, retry shortly', code: 'overloaded', retry_after_sec: 5 }, headers: { 'retry-after': '5' } });
      }
      for (const s of settled) if (s.status === 'fulfilled') assertOk(s.value);
      expect(settled.filter((s) => s.status === 'fulfilled').length).toBeGreaterThanOrEqual(1);
      // The queue drained: the next body is prepared.
      assertOk(await preparer.prepare({ kind: 'listings', update: 'replace', withHash: false }, Buffer.from(large)));
    } finally {
      await preparer.close();
    }
  });

  it('is bounded by default, so that queued bodies (up to 2 MB each) cannot grow without limit', async () => {
    expect(DEFAULT_MAX_QUEUE).toBeGreaterThan(0);
    const preparer = new ImportPreparer(1);
    try {
      const settled = await Promise.allSettled(Array.from({ length: DEFAULT_MAX_QUEUE + 4 }, () => preparer.prepare({ kind: 'listings', update: 'replace', withHash: false }, Buffer.from(large))));
      expect(settled.some((s) => s.status === 'rejected' && s.reason instanceof ApiError && s.reason.statusCode === 503)).toBe(true);
    } finally {
      await preparer.close();
    }
  });

  it('never refuses a body prepared inline, however many arrive at once', async () => {
    const inline = new ImportPreparer(0, { maxQueue: 1 });
    const small = Buffer.from(JSON.stringify({ listings: [validListing()] }));
    const settled = await Promise.allSettled(Array.from({ length: 5 }, () => inline.prepare({ kind: 'listings', update: 'replace', withHash: false }, Buffer.from(large))));
    expect(settled.every((s) => s.status === 'fulfilled')).toBe(true);
    const threaded = new ImportPreparer(1, { maxQueue: 1 });
    try {
      const smalls = await Promise.allSettled(Array.from({ length: 5 }, () => threaded.prepare({ kind: 'listings', update: 'replace', withHash: false }, small)));
      expect(smalls.every((s) => s.status === 'fulfilled')).toBe(true);
    } finally {
      await threaded.close();
    }
  });
});

function assertOk(outcome: PrepareOutcome): asserts outcome is PreparedImport {
  expect(isImportRefusal(outcome)).toBe(false);
}
