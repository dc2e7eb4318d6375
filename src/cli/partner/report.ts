import { createWriteStream, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import type { RowFailure } from './batcher.js';
import { UsageError } from './usage-error.js';

export type ReportFormat = 'csv' | 'json';

export function reportFormatOfPath(path: string): ReportFormat | undefined {
  const lower = path.toLowerCase();
  if (lower.endsWith('.csv')) return 'csv';
  if (lower.endsWith('.json')) return 'json';
  return undefined;
}

/** Where a command's --report goes: `path` and the format its extension names; UsageError for any other. */
export type ReportOption = { path: string; format: ReportFormat };

export function reportOptionOf(path: string): ReportOption {
  const format = reportFormatOfPath(path);
  if (!format) throw new UsageError(`--report must name a .csv or .json file (got ${JSON.stringify(path)})`);
  return { path, format };
}

function csvCell(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

/**
 * The failed rows, written as they are settled (never held in memory). CSV: the columns
 * `line,reason,field,code,external_id` (`index` for a JSON array input), one line per problem of
 * a row (docs/rows.md#row-error-codes), or one line with empty `field` and `code` when the
 * failure has no details (a batch refused as a whole, an unreadable line). JSON: an array of
 * `{"line": n, "external_id": "...", "reason": "...", "details": [{field, code, message}]}`.
 */
export class ReportWriter {
  private written = 0;

  private constructor(
    private readonly out: WriteStream,
    private readonly format: ReportFormat,
    private readonly locationName: 'line' | 'index',
  ) {}

  /** Opens (creates or truncates) the file; fails at once when it cannot be written. */
  static async open(path: string, format: ReportFormat, locationName: 'line' | 'index'): Promise<ReportWriter> {
    const out = createWriteStream(path);
    await once(out, 'open');
    const writer = new ReportWriter(out, format, locationName);
    await writer.write(format === 'csv' ? `${locationName},reason,field,code,external_id\n` : '[');
    return writer;
  }

  async add(failures: readonly RowFailure[]): Promise<void> {
    for (const { location, reason, details = [], externalId } of failures) {
      if (this.format === 'csv') {
        const id = csvCell(externalId ?? '');
        const problems = details.length > 0 ? details : [{ field: null, code: '' }];
        // note: the code is quoted as any cell is: it may come from a server (check-reply.ts)
        for (const { field, code } of problems) await this.write(`${location},${csvCell(reason)},${csvCell(field ?? '')},${csvCell(code)},${id}\n`);
      } else {
        const entry = { [this.locationName]: location, ...(externalId === undefined ? {} : { external_id: externalId }), reason, details };
        await this.write(`${this.written === 0 ? '\n' : ',\n'}  ${JSON.stringify(entry)}`);
      }
      this.written += 1;
    }
  }

  async close(): Promise<void> {
    if (this.format === 'json') await this.write(this.written === 0 ? ']\n' : '\n]\n');
    this.out.end();
    await once(this.out, 'finish');
  }

  private async write(text: string): Promise<void> {
    // note: waits for the file to drain, so a huge report never piles up in memory.
    if (!this.out.write(text)) await once(this.out, 'drain');
  }
}
