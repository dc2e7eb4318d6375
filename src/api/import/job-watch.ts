export type JobOutcome = { state: 'completed'; result: unknown } | { state: 'failed'; reason: string };

/**
 * What one waiting request knows about its job: whether a worker has taken it and how it ended.
 * Fed by queue events and by a poll timer, whichever comes first; later news is ignored.
 */
export class JobWatch {
  readonly pickedUp: Promise<void>;
  readonly finished: Promise<JobOutcome>;
  private resolvePickedUp!: () => void;
  private resolveFinished!: (outcome: JobOutcome) => void;
  private readonly timer: NodeJS.Timeout;

  constructor(poll: () => Promise<void>, pollIntervalMs: number) {
    this.pickedUp = new Promise((resolve) => {
      this.resolvePickedUp = resolve;
    });
    this.finished = new Promise((resolve) => {
      this.resolveFinished = resolve;
    });
    this.timer = setInterval(() => void poll(), pollIntervalMs);
  }

  markPickedUp(): void {
    this.resolvePickedUp();
  }

  finish(outcome: JobOutcome): void {
    // A job that finished was necessarily picked up.
    this.resolvePickedUp();
    this.resolveFinished(outcome);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
