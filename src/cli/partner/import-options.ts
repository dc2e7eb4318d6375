/**
 * What an import asks of the server beyond its rows (docs/catalogue.md#merge, #mirror), and how a
 * file import's query says it. note: the client package's, which the CLI sends its files through:
 * the query is written once.
 */
export { fileImportQuery, type FileImportOptions, type MirrorOptions, type UpdateMode } from '@bulk-import/client';
