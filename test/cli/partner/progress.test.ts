import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BAR_LINE_MAX_COLUMNS, createProgress } from '../../../src/cli/partner/progress.js';

/** A terminal of `columns` columns that keeps everything written to it. */
class FakeTty extends Writable {
  readonly isTTY = true;
  written = '';

  constructor(readonly columns: number) {
    super();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: () => void): void {
    this.written += chunk.toString();
    callback();
  }

  /**
   * The text of every line drawn: each escape sequence (a cursor move, a cleared line) ends a
   * stretch of text, as do line breaks. note: the bar itself holds no escape sequence (no colour).
   */
  drawnLines(): string[] {
    return (
      this.written
        // eslint-disable-next-line no-control-regex -- the terminal's escape sequences are the point
        .replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '\n')
        .split(/[\r\n]/)
        .filter((line) => line.trim() !== '')
    );
  }
}

/** Characters as a terminal counts them: the bar's shades are one column each. */
const columnsOf = (line: string) => [...line].length;

const START = new Date('2026-11-26T12:00:00Z').getTime();

/** Draws a 1,000,000-row run through `states` ([seconds since the start, rows done]) and returns the lines drawn. */
async function drawRun(columns: number, states: [number, number][]): Promise<string[]> {
  const tty = new FakeTty(columns);
  // note: only Date is faked, for the rate and ETA; cli-progress redraws on real timers.
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(START);
  const progress = createProgress({ total: 1_000_000, stream: tty as unknown as NodeJS.WriteStream, quiet: false });
  for (const [seconds, done] of states) {
    vi.setSystemTime(START + seconds * 1000);
    progress.update(done);
    // one redraw of the bar (it redraws every 100 ms)
    await sleep(130);
  }
  progress.stop();
  return tty.drawnLines();
}

afterEach(() => {
  vi.useRealTimers();
});

describe('the partner CLI\'s progress bar on a terminal', () => {
  const REALISTIC: [number, number][] = [
    [0.5, 0], // nothing yet: ETA ?
    [1, 1], // one row in a second: ETA 277h46m
    [4, 5_000], // 1250 rows/s, ETA 13m16s
    [10, 250_000], // 25000 rows/s
    [0.4, 999_999], // a fast local run: 2499998 rows/s
    [8, 1_000_000], // done
  ];

  it.each([80, 120, 200])('draws no line wider than 80 columns on a %i-column terminal, at 1,000,000 rows', async (columns) => {
    const lines = await drawRun(columns, REALISTIC);
    const bars = lines.filter((line) => line.includes('rows/s'));
    expect(bars.length).toBeGreaterThanOrEqual(REALISTIC.length);
    const widest = Math.max(...bars.map(columnsOf));
    expect(widest).toBeLessThanOrEqual(BAR_LINE_MAX_COLUMNS);
    expect(BAR_LINE_MAX_COLUMNS).toBe(80);
    // the whole line is drawn, ETA included: nothing left for the terminal to cut
    for (const line of bars) expect(line).toMatch(/^[\u2588\u2591]{10,40} \d{1,3}% \| +\d+\/\d+ rows \| \d+ rows\/s \| ETA \S+$/);
  });

  it('shows the counts, rate and ETA it was given', async () => {
    const lines = await drawRun(80, REALISTIC);
    expect(lines).toContainEqual(expect.stringMatching(/ 0% \| +1\/1000000 rows \| 1 rows\/s \| ETA 277h46m$/));
    expect(lines).toContainEqual(expect.stringMatching(/ 0% \| +5000\/1000000 rows \| 1250 rows\/s \| ETA 13m16s$/));
    expect(lines).toContainEqual(expect.stringMatching(/ 99% \| +999999\/1000000 rows \| 2499998 rows\/s \| ETA 0s$/));
    expect(lines.at(-1)).toMatch(/^\u2588+ 100% \| 1000000\/1000000 rows \| 125000 rows\/s \| ETA 0s$/);
  });

  it('keeps the bar\'s length while the count, the rate and the ETA change', async () => {
    const lines = (await drawRun(80, REALISTIC)).filter((line) => line.includes('rows/s'));
    const barLengths = new Set(lines.map((line) => /^[\u2588\u2591]+/.exec(line)![0].length));
    expect(barLengths.size).toBe(1);
  });

  it('stays within 80 columns past its end (more rows than counted)', async () => {
    const lines = await drawRun(80, [[5, 1_000_000], [6, 1_000_123]]);
    expect(lines.at(-1)).toContain('1000123/1000123 rows');
    expect(Math.max(...lines.map(columnsOf))).toBeLessThanOrEqual(80);
  });
});
