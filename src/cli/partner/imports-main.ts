import { setTimeout as sleep } from 'node:timers/promises';
import { ApiClient } from './api-client.js';
import type { ApiContext } from './api-context.js';
import { insecureWarning } from './api-target.js';
import type { CliIo } from './cli-io.js';
import { VERSION_LINE } from './cli-version.js';
import { FatalError } from './fatal-error.js';
import { IMPORTS_USAGE, parseImportsArgs } from './imports-args.js';
import { InputError } from './input-error.js';
import { listImports } from './list-imports.js';
import { printable } from './printable.js';
import { RateLimitPacer } from './rate-limit.js';
import { rebuildReport } from './rebuild-report.js';
import { DEFAULT_RETRY_POLICY } from './retry-policy.js';
import { showImport } from './show-import.js';
import { UsageError } from './usage-error.js';

/**
 * `bulk-import imports show|list|errors ...` (`argv` after `imports`). Returns the exit status:
 * 0 done, 1 no such import (404), 2 usage error, authentication failure, unreachable server, a
 * reply that cannot be believed or a report that cannot be written, as for an import run.
 */
export async function importsMain(argv: string[], env: NodeJS.ProcessEnv, io: CliIo, userAgent: string): Promise<number> {
  let options;
  try {
    options = parseImportsArgs(argv, env);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.stderr.write(`error: ${printable(error.message)}\n\n${IMPORTS_USAGE}\n`);
    return 2;
  }
  if (options === 'help') {
    io.stdout.write(`${IMPORTS_USAGE}\n`);
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
    switch (options.command) {
      case 'show':
        return await showImport(ctx, options, io);
      case 'list':
        return await listImports(ctx, options, io);
      case 'errors':
        return await rebuildReport(ctx, options, io);
    }
  } catch (error) {
    if (!(error instanceof FatalError || error instanceof InputError)) throw error;
    io.stderr.write(`error: ${printable(error.message)}\n`);
    return 2;
  }
}
