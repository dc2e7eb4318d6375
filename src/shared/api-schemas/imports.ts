import { z } from 'zod';
import { IMPORT_KIND_NAMES } from '../import/import-kinds.js';
import { IMPORT_ACTIONS } from '../import/row-removal-job.js';
import { RowErrorSchema } from '../rows/row-errors.js';
import { IdParameterSchema } from './id-parameter.js';
import { ImportIdSchema } from './import-id.js';

/** The import resource (docs/imports.md): what a partner reads back of an import. */

const count = (description: string) => z.number().int().nonnegative().meta({ description });
const time = (description: string) => z.string().nullable().meta({ description, format: 'date-time' });

export const IMPORT_STATES = ['queued', 'running', 'completed', 'failed', 'cancelled'] as const;

export const ImportSchema = z
  .object({
    id: ImportIdSchema,
    kind: z.enum(IMPORT_KIND_NAMES as ['machines', 'listings']),
    source: z.enum(['request', 'file']).meta({ description: '`request`: a bulk request; `file`: a whole file in one request.' }),
    action: z.enum(IMPORT_ACTIONS).meta({
      description:
        '`upsert`: rows created or updated (every bulk request and file). `archive` or `delete`: the rows a `bulk-archive` or `bulk-delete` request named (docs/catalogue.md#archive-and-delete).',
    }),
    mode: z.enum(['upsert', 'mirror']).meta({
      description: '`mirror`: a file import that is the whole catalogue, whose missing rows are removed (see `removal`); `upsert` for every other import.',
    }),
    removal: z
      .object({
        missing: z.enum(['archive', 'delete']).meta({ description: 'What is done to the rows the file left out.' }),
        max_removal: z.number().int().min(0).max(100).meta({ description: 'The guard: the most rows removed, in percent of the catalogue the file replaces (the account\'s active rows of that kind with an `external_id` when the upload began).' }),
        state: z.enum(['pending', 'done', 'held', 'skipped']).meta({
          description: '`pending` until the file is written, then `done`, `held` (the guard held it) or `skipped` (the import was cancelled or failed: nothing removed).',
        }),
        rows: count('Rows removed (`done`), the rows it would have removed (`held`), else 0.'),
      })
      .nullable()
      .meta({ description: 'A mirror\'s removal of the rows its file left out; null for every other import.' }),
    state: z.enum(IMPORT_STATES).meta({
      description:
        '`queued` -> `running` -> `completed`, `failed` or `cancelled`. `failed`: nothing was written. `cancelled`: a file import stopped by `POST /v1/api/imports/{id}/cancel`; what its chunks wrote before stays. An import answered 504 reads `running` until its job ends.',
    }),
    created_at: z.string().meta({ description: 'When the API accepted it (ISO 8601).', format: 'date-time' }),
    started_at: time('When a worker started writing it: for a bulk request known once it ended, for a file when its first chunk was written; null before, and for an import that never ran.'),
    finished_at: time('When it ended; null while queued or running.'),
    rows: z
      .object({
        received: count('Rows sent, valid or not (for an `archive` or `delete`: the entries sent).'),
        processed: count('Rows done so far: `inserted + updated + unchanged + skipped` (an `archive` or `delete` adds its `archived` or `deleted`). A bulk request is written all at once; a file import\'s grows as each of its chunks commits.'),
        inserted: count('Rows created.'),
        updated: count('Rows that existed (matched on `external_id`) and were changed; 0 when no row carried `external_id`.'),
        unchanged: count('Rows that existed and were already as sent; 0 when no row carried `external_id`. For an `archive`: rows already archived.'),
        archived: count('Rows archived: by an `archive` (its entries that named an active row), or by a mirror\'s removal; else 0.'),
        deleted: count('Rows deleted: by a `delete`, or by a mirror\'s removal; else 0.'),
        skipped: count('Rows refused (for an `archive` or `delete`: entries that failed); each is in the error list.'),
      })
      .meta({
        description:
          'A bulk request\'s import counts its written rows once it completed: `inserted`, `updated` and `unchanged` are 0 before, and stay 0 when it `failed` (nothing was written). A file import counts what its chunks wrote so far, whatever its state: a `cancelled` one keeps the rows written before it stopped.',
      }),
    error_count: count('Entries of the error list (`GET /v1/api/imports/{id}/errors`).'),
  })
  .meta({ id: 'Import', description: 'An import: one bulk request (or one file), its state and its counts.' });

export const ImportListSchema = z
  .object({
    data: z.array(ImportSchema).meta({ description: 'Newest first.' }),
    has_more: z.boolean().meta({ description: 'More imports follow: ask again with `starting_after` the last id of `data`.' }),
  })
  .meta({ id: 'ImportList', description: 'A page of the account\'s imports, newest first.' });

export const ImportErrorListSchema = z
  .object({
    data: z.array(RowErrorSchema).meta({ description: 'The failed rows in index order.' }),
    has_more: z.boolean().meta({ description: 'More rows follow: ask again with `starting_after` the last `index` of `data`.' }),
  })
  .meta({ id: 'ImportErrorList', description: 'A page of an import\'s failed rows, in index order.' });

export const ImportIdParamsSchema = z.object({
  id: IdParameterSchema.meta({
    description: 'The import\'s id, as `import_id` or `Location` gave it. Any other value, or another account\'s import, gets 404.',
  }),
});

/** The header line of the CSV download of an import's failed rows: one line per problem of a row. */
export const IMPORT_ERRORS_CSV_COLUMNS = ['index', 'external_id', 'field', 'code', 'message'] as const;
