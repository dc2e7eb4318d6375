import type { Import } from './import-resource.js';

/** A mirror's removal of the rows its file left out, as its import reads (docs/catalogue.md#mirror). */
export type MirrorRemoval = NonNullable<Import['removal']>;

/** Why a held removal was held, as far as the import tells. */
export type HeldBy = { by: 'unreadable_line'; location: number } | { by: 'max_removal' };

/** The removal in the summary's words: `removal done: 3 archived`, `removal held: 40 would have been deleted, nothing removed`. */
export function removalText(removal: MirrorRemoval): string {
  const verb = removal.missing === 'delete' ? 'deleted' : 'archived';
  switch (removal.state) {
    case 'pending':
      return 'removal pending';
    case 'done':
      return `removal done: ${removal.rows} ${verb}`;
    case 'held':
      return `removal held: ${removal.rows} would have been ${verb}, nothing removed`;
    case 'skipped':
      return 'removal skipped: nothing removed';
  }
}

/** Said once the server has the file, while the removal is pending. */
export function pendingNotice(importId: string, kind: string, removal: MirrorRemoval): string {
  const verb = removal.missing === 'delete' ? 'deleted' : 'archived';
  return (
    `import ${importId} is a mirror: once every row is written, the account's ${kind} the file leaves out are ${verb}, ` +
    `unless they are more than ${removal.max_removal}% of its active ${kind} with an external_id or a line of the file cannot be read (removal pending)`
  );
}

/**
 * What a held removal means and what to do. note: the import says only that the guard held; an
 * unreadable line in its error list holds the removal whatever the share (docs/catalogue.md#mirror),
 * so it is named first when there is one; without one, the share passed `max_removal`.
 */
export function heldNotice(importId: string, removal: MirrorRemoval, heldBy: HeldBy, location: 'line' | 'index'): string {
  const verb = removal.missing === 'delete' ? 'deleted' : 'archived';
  const why =
    heldBy.by === 'unreadable_line'
      ? `${location} ${heldBy.location} of the file could not be read (not a JSON object, or a CSV record whose cell count differs from the header's), so the server could not know every external_id the file holds`
      : `the ${removal.rows} rows are more than the guard's ${removal.max_removal}% of the account's active rows of that kind with an external_id when the upload began`;
  return (
    `import ${importId}: the mirror did not take effect: nothing was removed (${removal.rows} rows would have been ${verb}) because ${why}. ` +
    `The rows of the file are written. Look into it, then send the file again${heldBy.by === 'max_removal' ? ' (with a larger --max-removal if the catalogue really shrank)' : ''}`
  );
}

/**
 * Why the import the server answered cannot be the mirror asked for, or undefined when it is: a
 * mirror reads `mode: "mirror"` with a removal, and one that completed has done or held it.
 */
export function mirrorProblem(found: Import): string | undefined {
  if (found.mode !== 'mirror' || !found.removal) return `import ${found.id} does not read as a mirror (mode ${found.mode ?? 'absent'}): the server did not take the file as one, and removed nothing`;
  if (found.state === 'completed' && (found.removal.state === 'pending' || found.removal.state === 'skipped')) {
    return `import ${found.id} completed with its removal ${found.removal.state}, which the server's answer cannot mean; check it with "bulk-import imports show ${found.id}"`;
  }
  return undefined;
}
