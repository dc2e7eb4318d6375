import { createWriteStream, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import type { RowOutcome } from '@bulk-import/client';
import { formulaSafeCsvText } from '../../shared/formula-safe-csv.js';
import { InputError } from './input-error.js';
import { serverText } from './printable.js';
import { UsageError } from './usage-error.js';

/**
 * --results FILE (docs/partner-cli.md#results): each row the server took, at its place in the file,
 * with our id for it and what the import did to it (`?return=rows`, docs/catalogue.md#rows-and-their-ids):
 * `line,external_id,id,outcome` (`index` for a JSON array input), a line per row in file order,
 * written as each batch is answered (never held in memory).
 *
 * note: the cells are escaped as the service's errors CSV escapes them (formula-safe-csv.ts), so
 * that an external_id never runs as a formula when the file is opened in a spreadsheet; every
 * text the server sent is bounded and printable first (serverText).
 */

/** A row the server answered for, at its place in the file. */
export interface RowResult {
  location: number;
  row: RowOutcome;
}

/** Where a batched run's answered rows go (settle-batch.ts). */
export interface ResultsSink {
  add(results: readonly RowResult[]): Promise<void>;
  /** rows of a batch that was written but answered without `rows` (a 504 settled by watching its import) */
  notReturned(rows: number): void;
}

/** --results' path: a .csv file; UsageError for any other. */
export function resultsPathOf(path: string): string {
  if (!path.toLowerCase().endsWith('.csv')) throw new UsageError(`--results must name a .csv file (got ${JSON.stringify(path)})`);
  return path;
}

export class ResultsWriter implements ResultsSink {
  /** rows written without an answer naming them (notReturned) */
  missing = 0;

  private constructor(private readonly out: WriteStream) {}

  /** Opens (creates or truncates) the file before anything is sent; an InputError when it cannot be written. */
  static async open(path: string, locationName: 'line' | 'index'): Promise<ResultsWriter> {
    try {
      const out = createWriteStream(path);
      await once(out, 'open');
      const writer = new ResultsWriter(out);
      await writer.write(formulaSafeCsvText([[locationName, 'external_id', 'id', 'outcome']]));
      return writer;
    } catch (error) {
      throw new InputError(`cannot write the results ${path}: ${(error as Error).message}`);
    }
  }

  async add(results: readonly RowResult[]): Promise<void> {
    if (results.length === 0) return;
    const records = results.map(({ location, row }) => [String(location), serverText(row.external_id ?? ''), serverText(row.id ?? ''), serverText(row.outcome)]);
    await this.write(formulaSafeCsvText(records));
  }

  notReturned(rows: number): void {
    this.missing += rows;
  }

  async close(): Promise<void> {
    this.out.end();
    await once(this.out, 'finish');
  }

  private async write(text: string): Promise<void> {
    // note: waits for the file to drain, as the report does
    if (!this.out.write(text)) await once(this.out, 'drain');
  }
}
