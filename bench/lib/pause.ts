/**
 * Waits `ms`, or less when `signal` aborts first: a soak client's pause that ends at once when the
 * load stops. note: it resolves either way (Node's timers/promises rejects on an abort), so the
 * client's loop sees the stop on its next turn.
 */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal.addEventListener('abort', done, { once: true });
  });
}
