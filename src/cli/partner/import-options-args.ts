import type { MirrorOptions, UpdateMode } from './import-options.js';
import { UsageError } from './usage-error.js';
import { MaxRemovalSchema } from '../../shared/api-schemas/max-removal.js';

/** The import command's options for a merge and a mirror (docs/partner-cli.md#merge-and-mirror), as parseArgs takes them. */
export const IMPORT_OPTIONS = {
  merge: { type: 'boolean', default: false },
  mirror: { type: 'boolean', default: false },
  missing: { type: 'string' },
  'max-removal': { type: 'string' },
} as const;


/**
 * `--merge` and `--mirror [--missing archive|delete] [--max-removal N]`; UsageError for a
 * combination the server would refuse, before anything is read or sent. note: a mirror is a file
 * import only: the server removes what the whole file left out, which no batch can tell.
 */
export function importOptionsOf(
  values: { merge: boolean; mirror: boolean; missing?: string; 'max-removal'?: string },
  background: boolean,
): { update: UpdateMode; mirror?: MirrorOptions } {
  const update: UpdateMode = values.merge ? 'merge' : 'replace';
  if (!values.mirror) {
    if (values.missing !== undefined) throw new UsageError('--missing needs --mirror: it says what a mirror does to the rows its file leaves out');
    if (values['max-removal'] !== undefined) throw new UsageError('--max-removal needs --mirror: it is the guard of a mirror\'s removal');
    return { update };
  }
  if (!background) throw new UsageError('--mirror needs --background: a mirror is one file import of the whole catalogue, whose left-out rows only the server can tell');
  const { missing } = values;
  if (missing !== undefined && missing !== 'archive' && missing !== 'delete') throw new UsageError(`--missing must be archive or delete (got ${JSON.stringify(missing)})`);
  // note: the server's own rule (MaxRemovalSchema), so that the CLI refuses exactly what the server would
  const given = values['max-removal'];
  const maxRemoval = given === undefined ? undefined : MaxRemovalSchema.safeParse(given);
  if (maxRemoval?.success === false) throw new UsageError(`--max-removal must be a whole number from 0 to 100 (got ${JSON.stringify(given)})`);
  return {
    update,
    mirror: { ...(missing === undefined ? {} : { missing }), ...(maxRemoval === undefined ? {} : { maxRemoval: maxRemoval.data }) },
  };
}
