import type { ApiTarget } from './api-target.js';
import { insecureWarning } from './api-target.js';
import type { CliIo } from './cli-io.js';
import { parseOrExit } from './parse-or-exit.js';
import { printable } from './printable.js';

/** What every command's options say of where its requests go (nothing, for a local dry run). */
export type CommandOptions = Partial<Pick<ApiTarget, 'baseUrl' | 'baseUrlOrigin'>> & { insecureHttp: boolean };

/** One command of the CLI: its usage text, how its arguments are read, and its run. */
export interface Command<Options extends CommandOptions> {
  usage: string;
  /** the arguments after the command's words: its options, or 'help', 'version'; UsageError when they are wrong */
  parse(args: string[], env: NodeJS.ProcessEnv): Options | 'help' | 'version';
  /** the run, to its exit status */
  run(options: Options, io: CliIo): Promise<number>;
}

/**
 * Reads a command's arguments and runs it. note: every command answers alike before it runs: a
 * usage error, --help and --version (parse-or-exit.ts), and the --insecure warning, printed even
 * with --quiet since it is about where the key goes.
 */
export async function runCommand<Options extends CommandOptions>(command: Command<Options>, args: string[], env: NodeJS.ProcessEnv, io: CliIo): Promise<number> {
  const options = parseOrExit(() => command.parse(args, env), command.usage, io);
  if (typeof options === 'number') return options;
  if (options.insecureHttp && options.baseUrl !== undefined && options.baseUrlOrigin !== undefined) {
    io.stderr.write(`warning: ${printable(insecureWarning({ baseUrl: options.baseUrl, baseUrlOrigin: options.baseUrlOrigin }))}\n`);
  }
  return command.run(options, io);
}
