import type { CliIo } from './cli-io.js';
import { runCommand } from './command.js';
import { commandOf } from './commands.js';

/**
 * The partner CLI: `bulk-import listings|machines FILE` to import a file (import-command.ts),
 * `bulk-import imports ...` to look up past imports, `bulk-import listings|machines
 * archive|delete FILE` or `... list`; the table of commands is commands.ts. Returns the exit
 * status: 0 done, 1 some rows failed or are unaccounted for (or no such import), 2 usage error,
 * unreadable file, authentication failure, unreachable server or a reply that cannot be
 * believed. Progress and notices go to stderr, the one-line summary to stdout.
 */
export async function main(argv: string[], env: NodeJS.ProcessEnv, io: CliIo): Promise<number> {
  const { command, args } = commandOf(argv);
  return runCommand(command, args, env, io);
}
