import { z } from 'zod';
import { IMPORT_KINDS, type ImportKind } from '../import/import-kinds.js';
import { ImportResultSchema } from '../import/import-job.js';
import { ImportIdSchema } from './import-id.js';
import { externalIdString } from '../rows/external-id.js';
import { ListingFieldsSchema } from '../rows/listing-row.js';
import { MachineRowSchema } from '../rows/machine-row.js';

/**
 * The component of the document that describes a valid row of each kind, by the name the
 * document gives it (the input variant of the row schema's id): what a generated client types its
 * rows with.
 */
export const ROW_COMPONENTS = { machines: 'MachineInput', listings: 'ListingInput' } as const satisfies Record<ImportKind, string>;

/** The document's reference to a kind's row component. */
export const rowComponentRef = (kind: ImportKind) => `#/components/schemas/${ROW_COMPONENTS[kind]}`;

/** The vendor extension by which a request's open row points at the component of a valid row. */
export const ROW_SCHEMA_EXTENSION = 'x-row-schema';

const ROW_IDS = { machines: 'Machine', listings: 'Listing' } as const satisfies Record<ImportKind, string>;

/** The row schemas, named, so that the document shows them as components (`MachineInput`, `ListingInput`). */
export const ROW_SCHEMAS = {
  machines: IMPORT_KINDS.machines.rowSchema.meta({ id: ROW_IDS.machines }),
  listings: IMPORT_KINDS.listings.rowSchema.meta({ id: ROW_IDS.listings }),
} as const;

/**
 * The component of the document that describes a valid row of an import with `update=merge`:
 * what a generated client types a merge's rows with.
 */
export const MERGE_ROW_COMPONENTS = { machines: 'MachineMergeInput', listings: 'ListingMergeInput' } as const satisfies Record<ImportKind, string>;

/** The vendor extension by which a request's open row points at the component of a valid merge row. */
export const MERGE_ROW_SCHEMA_EXTENSION = 'x-merge-row-schema';

/**
 * A merge row as the document shows it (docs/catalogue.md#merge): `external_id`, required, and
 * any of the kind's other fields, each by its own rule. note: the document's account of what
 * validateMergeRow (merge-row.ts) takes, from the same field rules: `null` clears an optional
 * field and sets a boolean's default, and a required field is refused null. A merge row naming
 * no row is created only when it is also a whole valid row, which the database decides.
 */
function mergeRowSchema(fields: typeof ListingFieldsSchema | typeof MachineRowSchema, id: string) {
  return fields
    .partial()
    .extend({
      external_id: externalIdString().meta({
        description: 'Required with `update=merge`: names the row of the account to change (active or archived, which it restores). When the account has no row with it, the row is created, provided it carries every required field.',
      }),
    })
    .meta({ id, description: 'A row of an import with `update=merge`: `external_id` and any of the other fields, each checked by its own rule; the fields it leaves out keep their values. `null` clears an optional field and sets a boolean to its default.' });
}

export const MERGE_ROW_SCHEMAS = {
  machines: mergeRowSchema(MachineRowSchema, 'MachineMerge'),
  listings: mergeRowSchema(ListingFieldsSchema, 'ListingMerge'),
} as const;

/**
 * The bulk request bodies (docs/endpoints.md#bulk-imports), as the service takes them.
 * note: what is refused as a whole is what checkImportBody refuses as a whole (not an object
 * holding the array, no rows, too many rows); each row is then checked on its own, and a failing
 * row (wrong types, missing fields, not even an object) is skipped and reported, not
 * fatal. So a row is a valid row (the component of ROW_COMPONENTS, which generators type their
 * inputs with) or any other JSON value: a gateway that validates requests against the document
 * must never refuse a request the service answers 201.
 */
function bulkBodySchema<K extends ImportKind>(kind: K) {
  const { maxRows, bodyLimitBytes } = IMPORT_KINDS[kind];
  const row = z
    .union([
      ROW_SCHEMAS[kind],
      MERGE_ROW_SCHEMAS[kind],
      z.unknown().meta({ description: `Any other value: a row that fails its checks (a wrong type, a missing field, a value out of its bounds, not even an object) is skipped and reported in \`errors\` by its index; the other rows are still written.` }),
    ])
    .meta({
      description: `A row, checked on its own: a valid one is an object as \`${ROW_COMPONENTS[kind]}\` describes (with \`update=merge\`, as \`${MERGE_ROW_COMPONENTS[kind]}\` does); any other is reported, not refused with the request.`,
      [ROW_SCHEMA_EXTENSION]: rowComponentRef(kind),
      [MERGE_ROW_SCHEMA_EXTENSION]: `#/components/schemas/${MERGE_ROW_COMPONENTS[kind]}`,
    });
  const rows = z.array(row).min(1).max(maxRows);
  return z.object({ [kind]: rows } as Record<K, typeof rows>).meta({
    description: `1 to ${maxRows} ${kind}, at most ${bodyLimitBytes.toLocaleString('en-US')} bytes. Refused as a whole (400) only when it is not an object holding the \`${kind}\` array, the array is empty or holds more than ${maxRows} rows, or no row is valid. Every row is checked on its own: a row that fails (see \`${ROW_COMPONENTS[kind]}\` for a valid one) is skipped and reported in \`errors\`; the others are still created.`,
  });
}

export const MachinesBulkBodySchema = bulkBodySchema('machines');
export const ListingsBulkBodySchema = bulkBodySchema('listings');

export const BULK_BODY_SCHEMAS = { machines: MachinesBulkBodySchema, listings: ListingsBulkBodySchema } as const;

export const BulkResponseSchema = ImportResultSchema.extend({ import_id: ImportIdSchema }).meta({
  id: 'BulkResult',
  description:
    '`inserted + skipped` is the number of rows sent; `errors` is sorted by `index`. When some row of the request carries `external_id`, `updated` and `unchanged` are added and `inserted + updated + unchanged + skipped` is the number of rows sent. `import_id` names the import, also in `Location`: an Idempotency-Key replay answers the same one.',
});

export const BulkDryRunResponseSchema = ImportResultSchema.extend({ dry_run: z.literal(true) }).meta({
  id: 'BulkDryRunResult',
  description: 'What the import would have given, with `dry_run: true`; nothing was written.',
});
