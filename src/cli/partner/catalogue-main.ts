import { setTimeout as sleep } from 'node:timers/promises';
import type { ImportKind } from '../../shared/import/import-kinds.js';
import { ApiClient } from './api-client.js';
import type { ApiContext } from './api-context.js';
import { insecureWarning } from './api-target.js';
import { CATALOGUE_USAGE, parseCatalogueArgs } from './catalogue-args.js';
import type { CliIo } from './cli-io.js';
import { VERSION_LINE } from './cli-version.js';
import { FatalError } from './fatal-error.js';
import { listRows } from './list-rows.js';
import { printable } from './printable.js';
import { RateLimitPacer } from './rate-limit.js';
import { DEFAULT_RETRY_POLICY } from './retry-policy.js';
import { UsageError } from './usage-error.js';

/**
 * `bulk-import listings|machines list ...` (`argv` after `list`). Returns the exit status: 0
 * done, 2 usage error, authentication failure, unreachable server or a reply that cannot be
 * believed, as for `imports` (imports-main.ts), whose reads it shares (read-api.ts).
 */
export async function catalogueMain(kind: ImportKind, argv: string[], env: NodeJS.ProcessEnv, io: CliIo, userAgent: string): Promise<number> {
  let options;
  try {
    options = parseCatalogueArgs(kind, argv, env);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.stderr.write(`error: ${printable(error.message)}\n\n${CATALOGUE_USAGE}\n`);
    return 2;
  }
  if (options === 'help') {
    io.stdout.write(`${CATALOGUE_USAGE}\n`);
    return 0;
  }
  if (options === 'version') {
    io.stdout.write(`${VERSION_LINE}\n`);
    return 0;
  }
  if (options.insecureHttp) io.stderr.write(`warning: ${printable(insecureWarning(options))}\n`);
  const ctx: ApiContext = {
    client: new ApiClient({ baseUrl: options.baseUrl, apiKey: options.apiKey, timeoutMs: options.timeoutMs, userAgent }),
    pacer: new RateLimitPacer(),
    policy: { ...DEFAULT_RETRY_POLICY, maxAttempts: options.maxAttempts, maxWaitMs: options.maxWaitMs, maxRetryTimeMs: options.maxRetryTimeMs },
    sleep: (ms: number) => sleep(ms),
    notice: (message: string) => void io.stderr.write(`${printable(message)}\n`),
  };
  try {
    return await listRows(ctx, options, io);
  } catch (error) {
    if (!(error instanceof FatalError)) throw error;
    io.stderr.write(`error: ${printable(error.message)}\n`);
    return 2;
  }
}
