import type { z } from 'zod';
import { ListingRowSchema } from './listing-row.js';
import { MachineRowSchema } from './machine-row.js';

/**
 * The two bulk imports and their limits (docs/endpoints.md#bulk-imports, docs/rows.md). `rowSchema` validates
 * and normalises a request row.
 */
export const BULK_KINDS = {
  machines: { maxRows: 500, bodyLimitBytes: 1_048_576, rowSchema: MachineRowSchema },
  listings: { maxRows: 200, bodyLimitBytes: 2_097_152, rowSchema: ListingRowSchema },
} as const satisfies Record<string, { maxRows: number; bodyLimitBytes: number; rowSchema: z.ZodType }>;

export type BulkKind = keyof typeof BULK_KINDS;
export const BULK_KIND_NAMES = Object.keys(BULK_KINDS) as BulkKind[];
