import type { z } from 'zod';
import { ListingRowSchema } from '../rows/listing-row.js';
import { MachineRowSchema } from '../rows/machine-row.js';

/**
 * The two bulk imports and their limits (docs/endpoints.md#bulk-imports, docs/rows.md). `rowSchema` validates
 * and normalises a request row.
 */
export const IMPORT_KINDS = {
  machines: { maxRows: 500, bodyLimitBytes: 1_048_576, rowSchema: MachineRowSchema },
  listings: { maxRows: 200, bodyLimitBytes: 2_097_152, rowSchema: ListingRowSchema },
} as const satisfies Record<string, { maxRows: number; bodyLimitBytes: number; rowSchema: z.ZodType }>;

export type ImportKind = keyof typeof IMPORT_KINDS;
export const IMPORT_KIND_NAMES = Object.keys(IMPORT_KINDS) as ImportKind[];
