import { z } from 'zod';
import { API_ERRORS, apiErrors } from '../../shared/errors/api-errors.js';
import type { MirrorRemoval } from '../../shared/repositories/mirror-removal.js';
import { MaxRemovalSchema } from '../../shared/api-schemas/max-removal.js';

/**
 * A file import's mirror parameters (docs/catalogue.md#mirror): `mode`, `missing` and
 * `max_removal`, each refused on its own (400 naming it); `missing` and `max_removal` need
 * `mode=mirror`.
 */

/** The guard when `max_removal` is not sent: a tenth of the account's active rows with an external_id. */
export const DEFAULT_MAX_REMOVAL_PERCENT = 10;

export const MirrorQueryShape = {
  mode: z
    .enum(['upsert', 'mirror'], { error: API_ERRORS.modeMalformed.text })
    .optional()
    .meta({
      description:
        '`mirror`: the file is the whole catalogue of its kind. Once it is written, every row of the account of that kind whose `external_id` appears on no line is archived (or deleted, `missing=delete`), unless the guard holds it (`max_removal`, or a line that could not be read). `upsert` (the default): rows the file leaves out stay. See docs/catalogue.md#mirror.',
    }),
  missing: z
    .enum(['archive', 'delete'], { error: API_ERRORS.missingMalformed.text })
    .optional()
    .meta({ description: 'With `mode=mirror`: what happens to the rows the file leaves out, `archive` (the default) or `delete`.' }),
  max_removal: MaxRemovalSchema.optional()
    .meta({
      description: `With \`mode=mirror\`: the guard, a percentage from 0 to 100 (default ${DEFAULT_MAX_REMOVAL_PERCENT}). When the rows to remove are more than this share of the catalogue the file replaces (the account's active rows of the kind that have an \`external_id\`, counted when the upload began), nothing is removed (the removal reads \`held\`) and the import still completes.`,
    }),
};

/** The answer to each parameter the schema refused, by its path. */
export const MIRROR_QUERY_REFUSALS: Record<string, () => ReturnType<typeof apiErrors.modeMalformed>> = {
  '/mode': apiErrors.modeMalformed,
  '/missing': apiErrors.missingMalformed,
  '/max_removal': apiErrors.maxRemovalMalformed,
};

/** The mirror a file import's query asks for, or undefined; ApiError for a removal parameter without a mirror. */
export function mirrorOf(query: { mode?: 'upsert' | 'mirror'; missing?: 'archive' | 'delete'; max_removal?: number }): MirrorRemoval | undefined {
  if (query.mode !== 'mirror') {
    if (query.missing !== undefined || query.max_removal !== undefined) throw apiErrors.removalWithoutMirror();
    return undefined;
  }
  return { missing: query.missing ?? 'archive', maxPercent: query.max_removal ?? DEFAULT_MAX_REMOVAL_PERCENT };
}
