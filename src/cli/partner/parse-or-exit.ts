import type { CliIo } from './cli-io.js';
import { VERSION_LINE } from './cli-version.js';
import { printable } from './printable.js';
import { UsageError } from './usage-error.js';

/**
 * A command's options, or the exit status when there is nothing to run. note: every command of the
 * CLI answers alike: a usage error on stderr with its usage (2), --help on stdout (0), --version (0).
 */
export function parseOrExit<Options>(parse: () => Options | 'help' | 'version', usage: string, io: CliIo): Options | number {
  let options: Options | 'help' | 'version';
  try {
    options = parse();
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.stderr.write(`error: ${printable(error.message)}\n\n${usage}\n`);
    return 2;
  }
  if (options === 'help') {
    io.stdout.write(`${usage}\n`);
    return 0;
  }
  if (options === 'version') {
    io.stdout.write(`${VERSION_LINE}\n`);
    return 0;
  }
  return options;
}
