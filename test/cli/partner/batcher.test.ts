import { describe, expect, it } from 'vitest';
import { Batcher } from '../../../src/cli/partner/batcher.js';

const row = (n: number, pad = 0) => JSON.stringify({ n, pad: 'x'.repeat(pad) });

describe('Batcher', () => {
  it('closes a batch at maxRows and keeps file order and locations', () => {
    const batcher = new Batcher('machines', { maxRows: 3, maxBytes: 1_000_000 });
    for (let i = 1; i <= 7; i += 1) batcher.addRow(i * 10, row(i));
    const ready = batcher.takeReady();
    expect(ready.map((b) => b.locations)).toEqual([[10, 20, 30], [40, 50, 60]]);
    expect(batcher.takeReady()).toEqual([]);
    const rest = batcher.flush();
    expect(rest.map((b) => b.locations)).toEqual([[70]]);
    expect(JSON.parse(ready[0]!.body())).toEqual({ machines: [{ n: 1, pad: '' }, { n: 2, pad: '' }, { n: 3, pad: '' }] });
  });

  it('closes a batch before it would exceed maxBytes, counting the envelope and commas exactly', () => {
    const one = row(1, 40);
    const envelope = Buffer.byteLength('{"listings":[]}');
    // room for exactly two rows and the comma between them
    const maxBytes = envelope + 2 * Buffer.byteLength(one) + 1;
    const batcher = new Batcher('listings', { maxRows: 200, maxBytes });
    for (let i = 0; i < 5; i += 1) batcher.addRow(i + 2, row(1, 40));
    const batches = batcher.flush();
    expect(batches.map((b) => b.rows.length)).toEqual([2, 2, 1]);
    for (const batch of batches) expect(Buffer.byteLength(batch.body())).toBeLessThanOrEqual(maxBytes);
    expect(Buffer.byteLength(batches[0]!.body())).toBe(maxBytes);
  });

  it('counts bytes, not characters', () => {
    const wide = JSON.stringify({ t: 'é'.repeat(10) }); // 2 bytes each
    const batcher = new Batcher('listings', { maxRows: 200, maxBytes: Buffer.byteLength('{"listings":[]}') + Buffer.byteLength(wide) });
    batcher.addRow(1, wide);
    batcher.addRow(2, wide);
    expect(batcher.flush().map((b) => b.rows.length)).toEqual([1, 1]);
  });

  it('refuses a row that cannot fit in any request', () => {
    const batcher = new Batcher('listings', { maxRows: 200, maxBytes: 100 });
    expect(batcher.addRow(1, row(1, 200))).toBe(false);
    expect(batcher.addRow(2, row(2))).toBe(true);
    expect(batcher.flush().map((b) => b.locations)).toEqual([[2]]);
  });

  it('carries local failures with the batch that was open, and closes after maxFailures', () => {
    const batcher = new Batcher('machines', { maxRows: 2, maxBytes: 1_000_000, maxFailures: 3 });
    batcher.addFailure({ location: 1, reason: 'bad' });
    batcher.addRow(2, row(2));
    batcher.addFailure({ location: 3, reason: 'bad' });
    batcher.addRow(4, row(4));
    batcher.addFailure({ location: 5, reason: 'bad' });
    batcher.addFailure({ location: 6, reason: 'bad' });
    batcher.addFailure({ location: 7, reason: 'bad' });
    batcher.addFailure({ location: 8, reason: 'bad' });
    const batches = batcher.flush();
    expect(batches.map((b) => [b.locations, b.failures.map((f) => f.location)])).toEqual([
      [[2, 4], [1, 3]],
      [[], [5, 6, 7]],
      [[], [8]],
    ]);
  });
});
