export type JobOutcome =
  | { state: 'completed'; result: unknown }
  | { state: 'failed'; reason: string }
  /** the job is in no list of the queue: trimmed after it finished, or lost with a Redis failover */
  | { state: 'gone' };

/**
 * Polls in a row that must find the job missing before it counts as gone: one poll may run
 * between a retry's removal of a failed job and its new add.
 */
const MISSING_POLLS_BEFORE_GONE = 3;

/**
 * What one waiting request knows about its job: whether a worker has taken it and how it ended.
 * Fed by the workers' reply and a poll timer, whichever comes first; later news is ignored.
 */
export class JobWatch {
  readonly pickedUp: Promise<void>;
  readonly finished: Promise<JobOutcome>;
  private resolvePickedUp!: () => void;
  private resolveFinished!: (outcome: JobOutcome) => void;
  private readonly timer: NodeJS.Timeout;
  /** whether the job was added (or may have been): only then does missing mean gone */
  private added = false;
  private missingPolls = 0;

  constructor(poll: () => Promise<void>, pollIntervalMs: number) {
    this.pickedUp = new Promise((resolve) => {
      this.resolvePickedUp = resolve;
    });
    this.finished = new Promise((resolve) => {
      this.resolveFinished = resolve;
    });
    this.timer = setInterval(() => void poll(), pollIntervalMs);
  }

  markAdded(): void {
    this.added = true;
  }

  markPickedUp(): void {
    this.missingPolls = 0;
    this.resolvePickedUp();
  }

  /** A poll found the job nowhere in the queue. */
  markMissing(): void {
    if (!this.added) return;
    this.missingPolls += 1;
    if (this.missingPolls >= MISSING_POLLS_BEFORE_GONE) this.finish({ state: 'gone' });
  }

  /** A poll found the job waiting or delayed. */
  markPresent(): void {
    this.missingPolls = 0;
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
