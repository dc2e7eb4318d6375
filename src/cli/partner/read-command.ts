import type { ApiContext } from './api-context.js';
import type { ApiTarget } from './api-target.js';
import type { CliIo } from './cli-io.js';
import { USER_AGENT } from './cli-version.js';
import { createApiContext } from './create-api-context.js';
import { FatalError } from './fatal-error.js';
import { InputError } from './input-error.js';
import { printable } from './printable.js';
import type { RequestLimits } from './request-options.js';

/**
 * Runs a command that reads from the API (`imports`, `list`): `read` with one API context, its
 * notices on stderr. A FatalError (the server, the key) or an InputError (a report that cannot be
 * written) stops it: its message on stderr, exit status 2.
 */
export async function runReads(options: ApiTarget & RequestLimits, io: CliIo, read: (ctx: ApiContext) => Promise<number>): Promise<number> {
  const ctx = createApiContext(options, options, USER_AGENT, (message) => void io.stderr.write(`${printable(message)}\n`));
  try {
    return await read(ctx);
  } catch (error) {
    if (!(error instanceof FatalError || error instanceof InputError)) throw error;
    io.stderr.write(`error: ${printable(error.message)}\n`);
    return 2;
  }
}
