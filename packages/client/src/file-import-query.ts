/** `merge`: each row changes only the fields it carries; `replace` (the server's default): whole rows. */
export type UpdateMode = 'replace' | 'merge';

/**
 * A mirror: the file is the whole catalogue of its kind. note: `missing` and `maxRemoval` are
 * sent only when given: the server's defaults (archive, 10 percent) apply otherwise, and the
 * import it answers says which it used.
 */
export interface MirrorOptions {
  missing?: 'archive' | 'delete';
  /** the guard, a whole percentage 0..100 */
  maxRemoval?: number;
}

/** What a file import asks of the server beyond its rows. */
export interface FileImportOptions {
  update?: UpdateMode;
  mirror?: MirrorOptions;
}

/** `kind=listings&update=merge&mode=mirror&missing=delete&max_removal=5`, each part only when asked for. */
export function fileImportQuery(kind: string, options: FileImportOptions): string {
  const query = new URLSearchParams({ kind });
  if (options.update === 'merge') query.set('update', 'merge');
  if (options.mirror) {
    query.set('mode', 'mirror');
    if (options.mirror.missing !== undefined) query.set('missing', options.mirror.missing);
    if (options.mirror.maxRemoval !== undefined) query.set('max_removal', String(options.mirror.maxRemoval));
  }
  return query.toString();
}
