import type { ServiceProcess } from '../../test/support/processes.js';
import type { SoakLog } from './soak-log.js';

export interface WorkerKill {
  atMs: number;
  pid: number | undefined;
  label: string;
  /** aimed at a worker inside an import's transaction */
  aimed: boolean;
  /** it was inside one when killed (an aimed kill that found none within its wait kills at random) */
  midImport: boolean;
  /** the clients' requests in flight when it was killed */
  requestsInFlight: number;
}

export interface WorkerPoolOptions {
  size: number;
  start: () => Promise<ServiceProcess>;
  /** which of these worker pids are inside a database transaction now */
  inTransaction: (pids: number[]) => Promise<number[]>;
  log: SoakLog;
  /** ms since the load started */
  now: () => number;
}

/** How long an aimed kill waits for a worker to be inside an import. */
const AIM_WITHIN_MS = 10_000;

/**
 * The soak's workers: `size` processes, one of which is killed with SIGKILL now and then and
 * replaced by a fresh one, never more than one down at once.
 */
export class WorkerPool {
  readonly live: { process: ServiceProcess; label: string }[] = [];
  readonly kills: WorkerKill[] = [];
  /** workers that exited without being killed by the soak */
  readonly unexpectedExits: string[] = [];
  readonly startFailures: string[] = [];
  private started = 0;

  constructor(private readonly options: WorkerPoolOptions) {}

  /** Starts workers until `size` are running; false when one would not start. */
  async fill(): Promise<boolean> {
    const missing = this.options.size - this.live.length;
    if (missing <= 0) return true;
    const started = await Promise.all(Array.from({ length: missing }, () => this.startOne()));
    return started.every(Boolean);
  }

  private async startOne(): Promise<boolean> {
    this.started += 1;
    const label = `worker#${this.started}`;
    try {
      const process = await this.options.start();
      this.options.log.attach(process, label);
      const entry = { process, label };
      this.live.push(entry);
      void process.exited.then((code) => {
        const index = this.live.indexOf(entry);
        if (index === -1) return; // killed by the soak, or stopped at the end
        this.live.splice(index, 1);
        const line = `${label} pid=${process.child.pid} exited by itself (code ${code}, signal ${process.child.signalCode})`;
        this.unexpectedExits.push(line);
        this.options.log.note(line);
      });
      this.options.log.note(`${label} started, pid=${process.child.pid}`);
      return true;
    } catch (error) {
      const line = `${label} did not start: ${(error as Error).message.split('\n')[0]}`;
      this.startFailures.push(line);
      this.options.log.note(line);
      return false;
    }
  }

  /**
   * SIGKILLs one worker and starts its replacement: one at random, or, `aimed`, one caught inside
   * an import's transaction (polled for up to 10 s; at random if none is). note: when fewer than
   * `size` run (a replacement that would not start), it only tries to start one again, so at
   * most one is ever down because of the soak.
   */
  async killOne(aimed: boolean, requestsInFlight: () => number): Promise<void> {
    if (this.live.length < this.options.size) {
      await this.fill();
      return;
    }
    let victim: (typeof this.live)[number] | undefined;
    if (aimed) {
      const until = this.options.now() + AIM_WITHIN_MS;
      while (victim === undefined && this.options.now() < until) {
        const pids = this.live.map((w) => w.process.child.pid).filter((pid): pid is number => pid !== undefined);
        const busy = await this.options.inTransaction(pids);
        victim = this.live.find((w) => w.process.child.pid !== undefined && busy.includes(w.process.child.pid));
        if (victim === undefined) await new Promise((resolve) => setTimeout(resolve, 25));
      }
    }
    const midImport = victim !== undefined;
    victim ??= this.live[Math.floor(Math.random() * this.live.length)]!;
    this.live.splice(this.live.indexOf(victim), 1);
    const kill: WorkerKill = { atMs: Math.round(this.options.now()), pid: victim.process.child.pid, label: victim.label, aimed, midImport, requestsInFlight: requestsInFlight() };
    victim.process.child.kill('SIGKILL');
    await victim.process.exited;
    this.kills.push(kill);
    this.options.log.note(
      `killed ${victim.label} pid=${kill.pid} with SIGKILL${midImport ? ' inside an import\'s transaction' : aimed ? ' (aimed, but no worker was inside an import within 10 s)' : ''} (${kill.requestsInFlight} requests in flight)`,
    );
    await this.fill();
  }

  /** Stops every worker still running, by its pid; SIGKILL after `timeoutMs`. */
  async stopAll(timeoutMs: number): Promise<void> {
    const stopping = this.live.splice(0);
    await Promise.all(stopping.map(({ process }) => process.stop('SIGTERM', timeoutMs)));
  }
}
