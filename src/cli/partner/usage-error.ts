import { parseArgs, type ParseArgsConfig } from 'node:util';

/** The command line is wrong: the message says how; exit status 2, with the usage. */
export class UsageError extends Error {}

/**
 * `argv` parsed with `options` (the shared request options, `--help` and `--version` added),
 * positionals allowed; an option node:util refuses is a UsageError.
 */
export function parseCommandLine<Options extends NonNullable<ParseArgsConfig['options']>>(argv: string[], options: Options) {
  try {
    return parseArgs({ args: argv, allowPositionals: true, options: { ...options, help: { type: 'boolean', short: 'h', default: false }, version: { type: 'boolean', short: 'V', default: false } } as const });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/** A positive number given as `name` (a whole one when `integer`), or `fallback` when absent. */
export function positiveNumber(name: string, raw: string | undefined, fallback: number, integer = false): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    throw new UsageError(`${name} must be a positive ${integer ? 'whole ' : ''}number (got ${JSON.stringify(raw)})`);
  }
  return value;
}
