
import type { Account, ArchiveResult, AsksForRows, BulkDryRunResult, BulkResult, DeleteResult, Import, ImportErrorRow, MergeRowInputs, RemovalRequest, RowInputs, RowsAnswer, StoredRows } from './api-types.js';
import { AttemptClient, type RowKind } from './attempt-client.js';
import { CLIENT_VERSION } from './client-version.js';
import { importFile, type FileAccepted, type FileImport } from './import-file.js';
import { importRows, type ImportRowsOptions, type MergeRowsOptions, type ReplaceRowsOptions, type RowsDryRun, type RowsImported } from './import-rows.js';
import { importErrors, listImports, listRows, type ListRowsOptions } from './pages.js';
import { cancelImport, getImport, me } from './reads.js';
import { exportRows, type ExportRowsOptions } from './export-rows.js';
import { removeRows, type RemoveRowsOptions, type RowsRemoved } from './remove-rows.js';
import { RateLimitPacer } from './rate-limit-pacer.js';
import { DEFAULT_RETRY_OPTIONS, type RetryOptions } from './retry-options.js';
import { watchImport, type WatchOptions } from './watch-import.js';

export interface ClientOptions {
  /** e.g. `https://api.example.com` */
  baseUrl: string;
  /** `svc_live_…`: keep it on your servers */
  apiKey: string;
  /** per attempt, reading the answer included (default 120 s) */
  timeoutMs?: number;
  /** default `bulk-import-client/<version>` */
  userAgent?: string;
  /** the largest answer read (default MAX_REPLY_BYTES, 16 MiB) */
  maxReplyBytes?: number;
  /** the fetch to send with (default: Node's own) */
  fetch?: typeof fetch;
  /** retries and waits, and their hooks (sleep, now, random, onRetry) */
  retry?: Partial<RetryOptions>;
}

/** The API, one method per thing a partner does; every method retries by `retry` and throws the errors of errors/. */
export interface BulkImportClient {
  /** the single-attempt layer under the helpers, for retry rules of your own */
  readonly attempts: AttemptClient;
  me(): Promise<Account>;
  /**
   * POST /v1/api/{kind}/bulk: 1 to 200 listings or 500 machines; the bad rows come back in
   * `body.errors`. Whole rows, or with `update: 'merge'` merge rows: `external_id` and the fields
   * to change.
   */
  importRows<K extends RowKind, O extends MergeRowsOptions & { dryRun?: false }>(kind: K, rows: readonly MergeRowInputs[K][], options: O): Promise<RowsImported<RowsAnswer<BulkResult, AsksForRows<O>>>>;
  importRows<K extends RowKind, O extends MergeRowsOptions & { dryRun: true }>(kind: K, rows: readonly MergeRowInputs[K][], options: O): Promise<RowsDryRun<RowsAnswer<BulkDryRunResult, AsksForRows<O>>>>;
  importRows<K extends RowKind, O extends ReplaceRowsOptions & { dryRun?: false } = { dryRun?: false }>(
    kind: K,
    rows: readonly RowInputs[K][],
    options?: O,
  ): Promise<RowsImported<RowsAnswer<BulkResult, AsksForRows<O>>>>;
  importRows<K extends RowKind, O extends ReplaceRowsOptions & { dryRun: true }>(kind: K, rows: readonly RowInputs[K][], options: O): Promise<RowsDryRun<RowsAnswer<BulkDryRunResult, AsksForRows<O>>>>;
  /** `returnRows: true` types `body.rows` (each entry's row and outcome), as for importRows. */
  archiveRows<O extends RemoveRowsOptions = RemoveRowsOptions>(kind: RowKind, request: RemovalRequest, options?: O): Promise<RowsRemoved<RowsAnswer<ArchiveResult, AsksForRows<O>>>>;
  deleteRows<O extends RemoveRowsOptions = RemoveRowsOptions>(kind: RowKind, request: RemovalRequest, options?: O): Promise<RowsRemoved<RowsAnswer<DeleteResult, AsksForRows<O>>>>;
  importFile(file: FileImport): Promise<FileAccepted>;
  getImport(id: string): Promise<Import>;
  watchImport(id: string, options?: WatchOptions): Promise<Import>;
  cancelImport(id: string): Promise<Import>;
  importErrors(id: string, options?: { pageSize?: number }): AsyncGenerator<ImportErrorRow, void, undefined>;
  listImports(options?: { pageSize?: number }): AsyncGenerator<Import, void, undefined>;
  listRows<K extends RowKind>(kind: K, options?: ListRowsOptions): AsyncGenerator<StoredRows[K], void, undefined>;
  /** GET /v1/api/{kind}/export: the whole catalogue in one snapshot, yielded a row at a time as it streams in */
  exportRows<K extends RowKind>(kind: K, options?: ExportRowsOptions): AsyncGenerator<StoredRows[K], void, undefined>;
}

/** A client of the API at `baseUrl` with `apiKey`. */
export function createClient(options: ClientOptions): BulkImportClient {
  const timeoutMs = options.timeoutMs ?? 120_000;
  const attempts = new AttemptClient({
    baseUrl: options.baseUrl,
    apiKey: options.apiKey,
    timeoutMs,
    userAgent: options.userAgent ?? `bulk-import-client/${CLIENT_VERSION}`,
    ...(options.maxReplyBytes === undefined ? {} : { maxReplyBytes: options.maxReplyBytes }),
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  });
  const retry = { ...DEFAULT_RETRY_OPTIONS, ...options.retry };
  const core = { attempts, retry, pacer: new RateLimitPacer(retry.now) };
  return {
    attempts,
    me: () => me(core),
    importRows: ((kind: RowKind, rows: readonly (RowInputs[RowKind] | MergeRowInputs[RowKind])[], rowOptions?: ImportRowsOptions) =>
      importRows(core, kind, rows, rowOptions)) as BulkImportClient['importRows'],
    archiveRows: ((kind: RowKind, request: RemovalRequest, removal?: RemoveRowsOptions) =>
      removeRows<ArchiveResult>(core, kind, 'archive', request, removal)) as BulkImportClient['archiveRows'],
    deleteRows: ((kind: RowKind, request: RemovalRequest, removal?: RemoveRowsOptions) =>
      removeRows<DeleteResult>(core, kind, 'delete', request, removal)) as BulkImportClient['deleteRows'],
    importFile: (file) => importFile(core, file),
    getImport: (id) => getImport(core, id),
    watchImport: (id, watch) => watchImport(core, id, watch),
    cancelImport: (id) => cancelImport(core, id),
    importErrors: (id, page) => importErrors(core, id, page),
    listImports: (page) => listImports(core, page),
    listRows: (kind, list) => listRows(core, kind, list),
    exportRows: (kind, rowOptions) => exportRows(core, kind, rowOptions, timeoutMs),
  };
}

