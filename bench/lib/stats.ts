export interface LoadResult {
  requests: number;
  errors: number;
  elapsedMs: number;
  p50Ms: number;
  p99Ms: number;
  requestsPerSec: number;
  rowsPerSec: number;
  /** status code counts, for spotting errors */
  statuses: Record<string, number>;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

export function summarise(latencies: number[], elapsedMs: number, rowsPerRequest: number, errors: number, statuses: Record<string, number>): LoadResult {
  const sorted = [...latencies].sort((a, b) => a - b);
  const requests = latencies.length;
  return {
    requests,
    errors,
    elapsedMs: round(elapsedMs),
    p50Ms: round(percentile(sorted, 50)),
    p99Ms: round(percentile(sorted, 99)),
    requestsPerSec: round((requests / elapsedMs) * 1000),
    rowsPerSec: round(((requests - errors) * rowsPerRequest * 1000) / elapsedMs),
    statuses,
  };
}

export function round(value: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

export function ratio(a: number, b: number): number {
  return round(a / b, 3);
}
