import type { Config } from '../shared/infra/config.js';
import type { Logger } from '../shared/infra/logger.js';

export interface FaultHooks {
  /** inside the import's transaction, after its rows are inserted */
  beforeCommit?: () => Promise<void>;
  /** after the transaction committed, before the job is acknowledged */
  afterCommit?: () => void;
}

const PAUSE_MS = 10 * 60_000;

/**
 * Test-only faults that the fault-tolerance tests trigger in a real worker process
 * (`NODE_ENV=test FAULT_INJECTION=...`). loadConfig ignores FAULT_INJECTION outside tests.
 */
export function faultHooks(config: Pick<Config, 'faultInjection'>, log: Logger): FaultHooks {
  switch (config.faultInjection) {
    case 'pause-before-commit':
      return {
        beforeCommit: async () => {
          log.warn('fault injection: pausing inside the transaction');
          await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
        },
      };
    case 'crash-after-commit':
      return {
        afterCommit: () => {
          log.warn('fault injection: crashing after commit');
          process.kill(process.pid, 'SIGKILL');
        },
      };
    default:
      return {};
  }
}
