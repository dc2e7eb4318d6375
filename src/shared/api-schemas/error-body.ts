import { z } from 'zod';
import { BulkResultSchema } from '../import-job/job-data.js';

/**
 * Every error response: `{error: "<text>", ...fields}` (docs/errors.md#shape). One shape for all
 * statuses, so the fields are optional and each status uses the ones its text names.
 *
 * note: responses are serialized through this schema, so a field missing here would be dropped
 * from every error body; the constraints stay loose enough that no real body can fail them.
 */
export const ErrorBodySchema = z
  .object({
    error: z.string().meta({ description: 'What went wrong, in words meant for a person.' }),
    errors: BulkResultSchema.shape.errors.optional().meta({
      description: '400 `no valid rows`: the reason of every row, by its index in the request array.',
    }),
    received: z.number().int().nonnegative().optional().meta({ description: '400 `Too many rows`: the number of rows sent.' }),
    limit_bytes: z.number().int().nonnegative().optional().meta({ description: '413: the endpoint\'s body limit in bytes.' }),
    retry_after_sec: z.number().int().nonnegative().optional().meta({
      description: '429 and 503: seconds to wait before retrying; the same value as the `Retry-After` header.',
    }),
    current_tier: z.string().optional().meta({ description: '402: the account\'s subscription tier.' }),
    upgrade_url: z.string().optional().meta({ description: '402: where the subscription can be upgraded.' }),
    request_id: z.string().optional().meta({
      description: '500 and 504: the request\'s id (also in `X-Request-Id`); quote it when asking for help.',
    }),
  })
  .meta({ id: 'Error', description: 'An error: `error` always, other fields as the status says.' });

export type ErrorBody = z.infer<typeof ErrorBodySchema>;
