const MINUTE_MS = 60_000;
// note: the server opens its window when it counts the request, a little after it was sent.
const WINDOW_MARGIN_MS = 1_000;

function intHeader(headers: Headers, name: string): number | undefined {
  const raw = headers.get(name);
  if (raw === null || !/^\d+$/.test(raw.trim())) return undefined;
  return Number(raw);
}

/**
 * Keeps a client under the account's per-minute quota from the `X-RateLimit-*` headers of each
 * reply. The server's minute window is fixed and starts with the first request after the last
 * one ended; it announces no reset time, so the start is inferred: a reply whose remaining count
 * is `limit - 1`, or higher than the previous reply's, opened a new window. When the remaining
 * count reaches 0 the next request waits for that window to end. When the start is unknown
 * (another client of the account opened it), the next request is sent and its 429 says how long
 * to wait: one refused request, never a busy loop.
 */
export class RateLimitPacer {
  private windowStart: number | undefined;
  private lastRemaining: number | undefined;
  private exhausted = false;

  /** `now`: its clock, which `observe`'s `sentAt` is read on (sendUntilSettled reads it as it sends) */
  constructor(readonly now: () => number = Date.now) {}

  /** Records a reply to a request sent at `sentAt`. */
  observe(sentAt: number, headers: Headers): void {
    const limit = intHeader(headers, 'x-ratelimit-limit-minute');
    const remaining = intHeader(headers, 'x-ratelimit-remaining-minute');
    if (limit === undefined || remaining === undefined) return;
    const opened = remaining === limit - 1 || (this.lastRemaining !== undefined && remaining > this.lastRemaining);
    if (opened) this.windowStart = sentAt;
    else if (this.windowStart !== undefined && sentAt >= this.windowStart + MINUTE_MS) this.windowStart = undefined;
    this.lastRemaining = remaining;
    this.exhausted = remaining === 0;
  }

  /** Milliseconds to wait before the next request (0 to send now). */
  delayBeforeNext(): number {
    if (!this.exhausted || this.windowStart === undefined) return 0;
    return Math.max(0, this.windowStart + MINUTE_MS + WINDOW_MARGIN_MS - this.now());
  }
}
