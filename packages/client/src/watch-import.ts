import type { Import } from './api-types.js';
import type { ClientCore } from './client-core.js';
import { WatchDeadlineError } from './errors/watch-deadline-error.js';
import { getImport } from './reads.js';

export interface WatchOptions {
  /** the longest the watch lasts, retries and waits included (default 10 minutes) */
  timeoutMs?: number;
  /** the first wait between reads, doubled after each up to `maxPollMs` (default 1 s and 15 s) */
  pollMs?: number;
  maxPollMs?: number;
  /** each read, for a progress display (`rows.processed` of `rows.received`) */
  onRead?(found: Import): void;
}

const ENDED: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);

/**
 * Reads GET /v1/api/imports/{id} until the import ends (`completed`, `failed`, `cancelled`) and
 * returns it as last read; WatchDeadlineError when it has not by `timeoutMs`. note: each read
 * counts against the account's minute quota: the growing wait keeps a long watch at four reads a
 * minute; a 429's Retry-After is waited out only while it ends before the deadline. A 404 (not an
 * import of the account) is an ApiError at once.
 */
export async function watchImport(core: ClientCore, id: string, options: WatchOptions = {}): Promise<Import> {
  const { now, sleep } = core.retry;
  const deadline = now() + (options.timeoutMs ?? 10 * 60_000);
  let delay = options.pollMs ?? 1_000;
  for (;;) {
    const last = await getImport(core, id, deadline);
    options.onRead?.(last);
    if (ENDED.has(last.state)) return last;
    const wait = Math.min(delay, deadline - now());
    if (wait <= 0) throw new WatchDeadlineError(id, last.state);
    await sleep(wait);
    delay = Math.min(delay * 2, options.maxPollMs ?? 15_000);
  }
}
