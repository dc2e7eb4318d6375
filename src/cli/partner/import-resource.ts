import type { z } from 'zod';
import { ImportSchema } from '../../shared/api-schemas/imports.js';
import type { ApiContext } from './api-context.js';
import { shapeProblem } from './check-reply.js';
import { FatalError } from './fatal-error.js';
import { readApi } from './read-api.js';

/**
 * An import as the API describes it (GET /v1/api/imports/{id}). note: the fields of archives,
 * deletes and mirrors (docs/catalogue.md) are optional here: a server from before them describes
 * its imports without them, no less truly.
 */
const CliImportSchema = ImportSchema.extend({
  action: ImportSchema.shape.action.optional(),
  mode: ImportSchema.shape.mode.optional(),
  removal: ImportSchema.shape.removal.optional(),
  rows: ImportSchema.shape.rows.extend({ archived: ImportSchema.shape.rows.shape.archived.optional(), deleted: ImportSchema.shape.rows.shape.deleted.optional() }),
});
export type Import = z.output<typeof CliImportSchema>;

/** The import's path, relative to the base URL. */
export function importPath(importId: string): string {
  return `v1/api/imports/${encodeURIComponent(importId)}`;
}

/** Its shape checked; `body` is the reply as the server sent it (`--json` prints that). */
export type FoundImport = { import: Import; body: unknown };

/** Reads one import: undefined when the server answers 404. */
export async function readImport(ctx: ApiContext, importId: string, deadline: number): Promise<FoundImport | undefined> {
  const reply = await readApi(ctx, importPath(importId), deadline);
  if (reply.status === 404) return undefined;
  return { import: believedImport(reply.body, `import ${importId}`), body: reply.body };
}

/** An import the server described, or FatalError when the description is not of its documented shape. */
export function believedImport(body: unknown, what: string): Import {
  const parsed = CliImportSchema.safeParse(body);
  if (!parsed.success) throw new FatalError(`the server's answer about ${what} cannot be believed: ${shapeProblem(parsed.error)}`, 'unknown');
  return parsed.data;
}
