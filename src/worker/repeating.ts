/** A piece of work a worker runs again and again: `stop` clears its timer and waits for a run under way. */
export interface Repeating {
  stop(): Promise<void>;
}

/**
 * Runs `run` every `intervalMs`, the first time one interval after start. note: the next run is
 * timed from the end of the last, so runs never overlap; the timer is unref'd, so it never keeps a
 * process alive. `run` handles its own failures (a rejection is only waited for).
 */
export function startRepeating(intervalMs: number, run: () => Promise<unknown>): Repeating {
  let stopped = false;
  let running: Promise<unknown> = Promise.resolve();
  let timer: NodeJS.Timeout;
  const schedule = () => {
    timer = setTimeout(() => {
      running = run()
        .catch(() => undefined)
        .finally(() => {
          if (!stopped) schedule();
        });
    }, intervalMs);
    timer.unref();
  };
  schedule();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
