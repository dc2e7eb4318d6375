import { z } from 'zod';
import { API_ERRORS } from '../errors/api-errors.js';
import type { ImportKind } from '../import/import-kinds.js';
import { EXTERNAL_ID_MAX_LENGTH, normaliseExternalId } from '../rows/external-id.js';
import { trimmedTextPattern } from '../rows/field-schemas.js';
import { LISTING_CATEGORIES, type ListingRow } from '../rows/listing-row.js';
import type { MachineRow } from '../rows/machine-row.js';
import { IdParameterSchema } from './id-parameter.js';
import { pageLimitSchema } from './page-limit.js';

/**
 * The account's rows as the API answers them (docs/catalogue.md#reading-rows-back): a listing or a
 * machine as stored, every field of its import under its own name, and when it was created,
 * last changed and archived. The CLI believes a reply by these same schemas.
 */

/** The most rows a page holds. */
export const CATALOGUE_PAGE_MAX = 100;
const CATALOGUE_PAGE_DEFAULT = 20;

/** A row's id as the service issues it: a UUID, time-ordered (so id order is creation order). */
export const RowIdSchema = z.string().meta({ description: 'Our id for the row: a UUID, time-ordered, so id order is creation order.', format: 'uuid' });

/**
 * A row id a client sends (a path's `{id}`, a page's `starting_after`): an id parameter in a
 * UUID's shape. note: the column is a uuid, on which PostgreSQL raises for any other text.
 */
export const RowIdParameterSchema = IdParameterSchema.regex(z.regexes.guid);

const time = (description: string) => z.string().meta({ description, format: 'date-time' });

/** What every row carries beside its own fields. */
const ROW_TIMES = {
  created_at: time('When the row was created (ISO 8601).'),
  updated_at: time('When the row last changed, was archived or restored (ISO 8601); equal to `created_at` until it first changes.'),
  archived_at: time('When the row was archived (ISO 8601); null while it is active.').nullable(),
};

const externalId = z.string().nullable().meta({ description: 'Your own id for the row, as stored (trimmed); null when it has none.' });
const stored = (description: string) => z.string().meta({ description });

/**
 * The fields of a listing resource. note: `satisfies` holds it to every field an import stores
 * (ListingRow), so a field added to the row schema cannot be left out of what is read back.
 */
const LISTING_FIELDS = {
  id: RowIdSchema,
  external_id: externalId,
  title: stored('Trimmed; at most 120 characters.'),
  description: stored('Trimmed; at most 2,000 characters.'),
  currency: z.literal('USD').meta({ description: 'Always `USD`.' }),
  price_cents: z.number().int().nonnegative().meta({ description: 'Price in US cents.' }),
  category: z.enum(LISTING_CATEGORIES).meta({ description: 'One of the marketplace\'s listing categories.' }),
  material: stored('Trimmed; at most 80 characters.'),
  photo_urls: z.array(z.string()).meta({ description: 'The first 8 URLs sent, in order; the first is the thumbnail.' }),
  color: z.string().nullable().meta({ description: 'At most 40 characters; null when none was sent.' }),
  tags: z.array(z.string()).meta({ description: 'The first 10 tags sent; `[]` when none.' }),
  print_time_hours: z.number().nonnegative().nullable().meta({ description: 'null when none was sent.' }),
  is_available: z.boolean().meta({ description: '`true` unless sent `false`.' }),
  allows_custom_orders: z.boolean().meta({ description: '`false` unless sent `true`.' }),
  thumbnail_url: stored('The first of `photo_urls`.'),
  maker_name: stored('The account\'s display name when the row was last written.'),
  maker_photo_url: z.string().nullable().meta({ description: 'The account\'s photo when the row was last written; null when it had none.' }),
  ...ROW_TIMES,
} satisfies Record<keyof ListingRow | 'id' | 'maker_name' | 'maker_photo_url' | keyof typeof ROW_TIMES, z.ZodType>;

/** The fields of a machine resource, held to every field an import stores (MachineRow). */
const MACHINE_FIELDS = {
  id: RowIdSchema,
  external_id: externalId,
  template_id: stored('Trimmed; at most 200 characters.'),
  category: stored('Trimmed; at most 80 characters.'),
  manufacturer: stored('Trimmed; at most 200 characters.'),
  model: stored('Trimmed; at most 200 characters.'),
  model_number: z.string().nullable().meta({ description: 'At most 200 characters; null when none was sent.' }),
  nickname: z.string().nullable().meta({ description: 'At most 80 characters; null when none was sent.' }),
  capabilities: z.array(z.string()).meta({ description: '`[]` when none.' }),
  is_skill_station: z.boolean().meta({ description: '`false` unless sent `true`.' }),
  verification_status: z.enum(['pending', 'verified', 'rejected']).meta({
    description: '`pending` when created, and again whenever its template, category, manufacturer, model or model number changes; then `verified` or `rejected` by the marketplace.',
  }),
  ...ROW_TIMES,
} satisfies Record<keyof MachineRow | 'id' | 'verification_status' | keyof typeof ROW_TIMES, z.ZodType>;

export const ListingSchema = z.object(LISTING_FIELDS).meta({ id: 'StoredListing', description: 'A listing of the account, active or archived, as stored.' });
export const MachineSchema = z.object(MACHINE_FIELDS).meta({ id: 'StoredMachine', description: 'A machine of the account, active or archived, as stored.' });

export type Listing = z.output<typeof ListingSchema>;
export type Machine = z.output<typeof MachineSchema>;

/** The resource schema of each kind. */
export const CATALOGUE_ROW_SCHEMAS = { listings: ListingSchema, machines: MachineSchema } as const satisfies Record<ImportKind, z.ZodType>;

const page = (kind: ImportKind, schema: z.ZodType, id: string) =>
  z
    .object({
      data: z.array(schema).meta({ description: 'Oldest first (creation order).' }),
      has_more: z.boolean().meta({ description: 'More rows follow: ask again with `starting_after` the last id of `data`.' }),
    })
    .meta({ id, description: `A page of the account's ${kind}, oldest first.` });

export const ListingPageSchema = page('listings', ListingSchema, 'ListingPage');
export const MachinePageSchema = page('machines', MachineSchema, 'MachinePage');

/**
 * `external_id=`: read as an import reads a row's `external_id` (trimmed), so that it finds the
 * row that import wrote; a value no row can have (blank, too long, control characters, not
 * Unicode) is refused rather than answered with an empty page.
 */
const ExternalIdFilterSchema = z
  .string({ error: API_ERRORS.externalIdFilterMalformed.text })
  .check((ctx) => {
    const id = normaliseExternalId(ctx.value);
    if (typeof id === 'string') ctx.value = id;
    else ctx.issues.push({ code: 'custom', message: API_ERRORS.externalIdFilterMalformed.text, input: ctx.value });
  })
  .meta({
    pattern: trimmedTextPattern(EXTERNAL_ID_MAX_LENGTH),
    description: 'Only the row with this `external_id` (0 or 1 row), matched exactly once trimmed, as an import matches it.',
    examples: ['SKU-10442'],
  });

/**
 * The instants `updated_since` may name, in UTC: years 0001 to 9999. note: a time written with an
 * offset can leave them (`0001-01-01T00:00:00+14:00` is in year 0 in UTC, `9999-12-31T23:59:59-14:00`
 * in year 10000), and PostgreSQL refuses such a time as it is handed over (22008, 22009).
 */
const UPDATED_SINCE_MIN_MS = Date.parse('0001-01-01T00:00:00.000Z');
const UPDATED_SINCE_MAX_MS = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * `updated_since=`: an ISO 8601 date and time with its zone (`Z` or an offset), within years 0001
 * to 9999 once in UTC. note: read as a Date, to the millisecond (a finer fraction is dropped,
 * which can only add rows changed within that millisecond, never leave one out); handed to
 * PostgreSQL as such, whatever offset was sent.
 */
const UpdatedSinceSchema = z.iso
  .datetime({ offset: true, error: API_ERRORS.updatedSinceMalformed.text })
  .transform((value) => new Date(value))
  .refine((date) => date.getTime() >= UPDATED_SINCE_MIN_MS && date.getTime() <= UPDATED_SINCE_MAX_MS, API_ERRORS.updatedSinceMalformed.text)
  .meta({
    description:
      'Only rows created, changed, archived or restored at or after this time: an ISO 8601 date and time with a zone (`Z` or `+02:00`), read to the millisecond. To sync, send the time your previous run started, a little earlier rather than later.',
    examples: ['2026-11-24T02:00:00Z'],
  });

/** A list's query (docs/catalogue.md#reading-rows-back); any other parameter is refused before it. */
export const CatalogueListQuerySchema = z.object({
  limit: pageLimitSchema(CATALOGUE_PAGE_MAX, CATALOGUE_PAGE_DEFAULT, 'rows'),
  starting_after: RowIdParameterSchema.optional().meta({
    description:
      'A row id: the page starts after it (the last id of the previous page). A position, not a lookup: the id of a row deleted or archived since, or of none, continues after it just the same.',
    format: 'uuid',
  }),
  external_id: ExternalIdFilterSchema.optional(),
  updated_since: UpdatedSinceSchema.optional(),
  archived: z
    .enum(['true', 'false'], { error: API_ERRORS.archivedMalformed.text })
    .default('false')
    .meta({ description: '`true`: only archived rows; `false` (the default): only active ones.' }),
});
export type CatalogueListQuery = z.output<typeof CatalogueListQuerySchema>;

/** What an export writes (docs/catalogue.md#export). */
export const EXPORT_FORMATS = ['ndjson', 'csv'] as const;

/** An export's query: the list's filters and the format; any other parameter is refused before it. */
export const CatalogueExportQuerySchema = CatalogueListQuerySchema.pick({ updated_since: true, archived: true }).extend({
  format: z
    .enum(EXPORT_FORMATS, { error: API_ERRORS.exportFormatMalformed.text })
    .default('ndjson')
    .meta({ description: '`ndjson` (the default): a row a line, `application/x-ndjson`; `csv`: a header of the field names, then a row a line, `text/csv`.' }),
});

export const CatalogueRowParamsSchema = z.object({
  id: RowIdParameterSchema.meta({ description: 'The row\'s id (a UUID). Another account\'s row, an unknown id and any other value get the same 404.' }),
});
