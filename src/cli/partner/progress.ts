import cliProgress from 'cli-progress';
import { printable } from './printable.js';

/** Where the run reports how far it got. */
export interface Progress {
  /** rows done so far (read and settled: failed locally, or their batch answered) */
  update(done: number): void;
  /** a message for the user, printed with printable(); it does not disturb the bar */
  notice(message: string): void;
  stop(): void;
}

export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?';
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/** Rows per second over the run so far, and the time left at that pace. */
function pace(done: number, total: number, startedAt: number, now: number): { rate: number; eta: number } {
  const elapsed = (now - startedAt) / 1000;
  const rate = elapsed > 0 ? done / elapsed : 0;
  return { rate, eta: rate > 0 ? Math.max(0, total - done) / rate : Number.POSITIVE_INFINITY };
}

/** The widest line the bar draws: a classic terminal's width, whatever the terminal's. */
export const BAR_LINE_MAX_COLUMNS = 80;
const BAR_MIN = 10;
const BAR_MAX = 40;

interface BarPayload {
  rate: string;
  etaText: string;
}

/** The counts beside the bar; the done count padded to the total's width. */
function countsText(percent: number, done: number, total: number, rate: string, eta: string): string {
  const totalText = String(total);
  return `${percent}% | ${String(done).padStart(totalText.length)}/${totalText} rows | ${rate} rows/s | ETA ${eta}`;
}

/**
 * One line of the bar: the bar, then the counts, in at most 80 columns (the terminal's width when
 * narrower). note: the line must never run past the edge, where the terminal would cut the ETA
 * off (cli-progress turns wrapping off while it draws). The bar is sized for the widest counts the
 * run can show (10 million rows/s, an ETA of 999h59m), so it keeps its length while the numbers
 * change; only counts wider still shorten it.
 */
const barLine: cliProgress.GenericFormatter = (options, params, payload: BarPayload) => {
  const counts = countsText(Math.floor(params.progress * 100), params.value, params.total, payload.rate, payload.etaText);
  const widest = countsText(100, params.total, params.total, '9999999', '999h59m');
  const width = Math.min(BAR_LINE_MAX_COLUMNS, params.maxWidth);
  const barsize = Math.max(BAR_MIN, Math.min(BAR_MAX, width - Math.max(counts.length, widest.length) - 1));
  return `${cliProgress.Format.BarFormat(params.progress, { ...options, barsize })} ${counts}`;
};

/** A bar redrawn in place, for a terminal (cli-progress). */
class BarProgress implements Progress {
  private readonly bars: cliProgress.MultiBar;
  private readonly bar: cliProgress.SingleBar;
  private readonly startedAt = Date.now();

  constructor(
    private readonly total: number,
    stream: NodeJS.WriteStream,
  ) {
    this.bars = new cliProgress.MultiBar(
      {
        stream,
        format: barLine,
        // note: the widest bar barLine draws: the characters are laid out to this size.
        barsize: BAR_MAX,
        hideCursor: true,
        clearOnComplete: false,
        stopOnComplete: false,
      },
      cliProgress.Presets.shades_classic,
    );
    this.bar = this.bars.create(Math.max(total, 1), 0, { rate: '0', etaText: '?' } satisfies BarPayload);
  }

  update(done: number): void {
    const { rate, eta } = pace(done, this.total, this.startedAt, Date.now());
    // note: the count is an estimate on odd files; the bar never runs past its end.
    if (done > this.total) this.bar.setTotal(done);
    this.bar.update(done, { rate: rate.toFixed(0), etaText: formatDuration(eta) } satisfies BarPayload);
  }

  notice(message: string): void {
    this.bars.log(`${printable(message)}\n`);
  }

  stop(): void {
    this.bars.stop();
  }
}

/** Plain lines at most every `intervalMs`, for logs and pipes. */
class LineProgress implements Progress {
  private readonly startedAt = Date.now();
  private lastPrinted = this.startedAt;
  private printedDone = -1;
  private done = 0;

  constructor(
    private readonly total: number,
    private readonly out: NodeJS.WritableStream,
    private readonly intervalMs: number,
  ) {}

  update(done: number): void {
    this.done = done;
    const now = Date.now();
    if (now - this.lastPrinted >= this.intervalMs) this.print(now);
  }

  notice(message: string): void {
    this.out.write(`${printable(message)}\n`);
  }

  stop(): void {
    if (this.printedDone !== this.done) this.print(Date.now());
  }

  private print(now: number): void {
    this.lastPrinted = now;
    this.printedDone = this.done;
    const { rate, eta } = pace(this.done, this.total, this.startedAt, now);
    const percent = this.total > 0 ? Math.min(100, Math.floor((this.done / this.total) * 100)) : 100;
    this.out.write(`progress: ${this.done}/${this.total} rows (${percent}%), ${rate.toFixed(0)} rows/s, ETA ${formatDuration(eta)}\n`);
  }
}

/** Notices only. */
class QuietProgress implements Progress {
  constructor(private readonly out: NodeJS.WritableStream) {}
  update(): void {}
  notice(message: string): void {
    this.out.write(`${printable(message)}\n`);
  }
  stop(): void {}
}

export interface ProgressOptions {
  total: number;
  stream: NodeJS.WriteStream;
  quiet: boolean;
  /** plain lines: how often */
  intervalMs?: number;
}

/** A bar on a terminal, plain lines otherwise, nothing but notices with `--quiet`. */
export function createProgress(options: ProgressOptions): Progress {
  if (options.quiet) return new QuietProgress(options.stream);
  if (options.stream.isTTY) return new BarProgress(options.total, options.stream);
  return new LineProgress(options.total, options.stream, options.intervalMs ?? 5_000);
}
