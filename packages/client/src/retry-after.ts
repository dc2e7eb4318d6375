/** `Retry-After` in milliseconds: delta-seconds or an HTTP date; undefined when absent or bad. */
export function retryAfterMs(headers: Headers, now = Date.now()): number | undefined {
  const raw = headers.get('retry-after')?.trim();
  if (raw === undefined || raw === '') return undefined;
  if (/^\d+$/.test(raw)) return Number(raw) * 1_000;
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
