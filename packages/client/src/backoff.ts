/** The delays of retries: doubling from `baseDelayMs` up to `maxDelayMs`. */
export interface BackoffSettings {
  baseDelayMs: number;
  maxDelayMs: number;
}

/**
 * The wait before retry number `attempt` (1 after the first failure): exponential with jitter,
 * half the delay fixed, half random, so that clients failing together spread out.
 */
export function backoffMs(settings: BackoffSettings, attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(settings.maxDelayMs, settings.baseDelayMs * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}
