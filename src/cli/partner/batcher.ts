import type { RowErrorDetail } from '../../shared/rows/row-errors.js';

/** A row that failed: where it is in the input file, and why (with the problems' codes when known). */
export interface RowFailure {
  location: number;
  reason: string;
  /** one per problem, when the row was checked (locally or by the server) */
  details?: RowErrorDetail[];
  /** the row's own id, when it had a valid one */
  externalId?: string;
}

export interface Batch {
  /** valid rows, each already serialised as JSON, in file order */
  rows: string[];
  /** the location of each entry of `rows` (the server's error `index` points into this) */
  locations: number[];
  /** rows that failed locally while this batch was filling, reported with it to keep file order */
  failures: RowFailure[];
  /** the request body: `{"<kind>":[...rows]}` */
  body(): string;
}

export interface BatcherLimits {
  /** rows per request (IMPORT_KINDS[kind].maxRows) */
  maxRows: number;
  /** bytes per request body (IMPORT_KINDS[kind].bodyLimitBytes) */
  maxBytes: number;
  /** local failures a batch may carry before it is closed, which bounds memory on a bad file */
  maxFailures?: number;
}

const DEFAULT_MAX_FAILURES = 10_000;

/**
 * Groups valid rows into request bodies of at most `maxRows` rows and `maxBytes` bytes. Local
 * failures ride along with the batch that was open when they were read, so the report can be
 * written in file order without holding the whole file's failures.
 */
export class Batcher {
  private rows: string[] = [];
  private locations: number[] = [];
  private failures: RowFailure[] = [];
  private bytes: number;
  private readonly ready: Batch[] = [];
  private readonly envelopeBytes: number;
  private readonly maxFailures: number;

  constructor(
    private readonly kind: string,
    private readonly limits: BatcherLimits,
  ) {
    this.envelopeBytes = Buffer.byteLength(`{"${kind}":[]}`);
    this.bytes = this.envelopeBytes;
    this.maxFailures = limits.maxFailures ?? DEFAULT_MAX_FAILURES;
  }

  /** The largest row that fits in a request on its own. */
  get maxRowBytes(): number {
    return this.limits.maxBytes - this.envelopeBytes;
  }

  /** Adds a valid row; returns false (and adds nothing) when the row alone exceeds a request. */
  addRow(location: number, json: string): boolean {
    const size = Buffer.byteLength(json);
    if (size > this.maxRowBytes) return false;
    // note: a comma goes before every row but the first.
    if (this.rows.length > 0 && this.bytes + 1 + size > this.limits.maxBytes) this.close();
    this.bytes += (this.rows.length > 0 ? 1 : 0) + size;
    this.rows.push(json);
    this.locations.push(location);
    if (this.rows.length >= this.limits.maxRows) this.close();
    return true;
  }

  addFailure(failure: RowFailure): void {
    this.failures.push(failure);
    if (this.failures.length >= this.maxFailures) this.close();
  }

  /** Batches that are full, oldest first; each is handed out once. */
  takeReady(): Batch[] {
    return this.ready.splice(0);
  }

  /** Closes the open batch (end of file) and hands out everything left. */
  flush(): Batch[] {
    this.close();
    return this.takeReady();
  }

  private close(): void {
    if (this.rows.length === 0 && this.failures.length === 0) return;
    const rows = this.rows;
    const kind = this.kind;
    this.ready.push({
      rows,
      locations: this.locations,
      failures: this.failures,
      body: () => `{"${kind}":[${rows.join(',')}]}`,
    });
    this.rows = [];
    this.locations = [];
    this.failures = [];
    this.bytes = this.envelopeBytes;
  }
}
