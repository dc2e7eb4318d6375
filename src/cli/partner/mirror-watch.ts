import type { RowFailure } from './batcher.js';
import type { Import } from './import-resource.js';
import { pendingNotice, type HeldBy, type MirrorRemoval } from './mirror-outcome.js';
import type { FailureSink } from './settle-batch.js';

/**
 * What a `--mirror` run learns while it watches its import: says once that the removal is
 * pending, and notes, as the failed rows pass on to the report, the first one the server could
 * not read as a row (`not_an_object`), which holds any removal (docs/catalogue.md#mirror).
 */
export class MirrorWatch {
  private pendingSaid = false;
  private firstUnreadable: number | undefined;
  /** the report the run writes to, through this watch */
  readonly sink: FailureSink;

  constructor(
    private readonly kind: string,
    report: FailureSink,
    private readonly notice: (message: string) => void,
  ) {
    this.sink = {
      add: async (failures: readonly RowFailure[]) => {
        this.firstUnreadable ??= failures.find((failure) => failure.details?.[0]?.code === 'not_an_object')?.location;
        await report.add(failures);
      },
    };
  }

  /** Each read of the import (run-file-import.ts onRead). */
  onRead(found: Import): void {
    if (this.pendingSaid || found.removal?.state !== 'pending') return;
    this.pendingSaid = true;
    this.notice(pendingNotice(found.id, this.kind, found.removal));
  }

  /** The removal of the import as last read, and why it was held, as far as the import tells. */
  outcomeOf(found: Import): { removal?: MirrorRemoval; heldBy?: HeldBy } {
    if (!found.removal) return {};
    return { removal: found.removal, heldBy: this.firstUnreadable === undefined ? { by: 'max_removal' } : { by: 'unreadable_line', location: this.firstUnreadable } };
  }
}
