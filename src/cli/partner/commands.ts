import { IMPORT_KIND_NAMES, type ImportKind } from '../../shared/import/import-kinds.js';
import { catalogueCommand } from './catalogue-command.js';
import { exportCommand } from './export-command.js';
import type { Command, CommandOptions } from './command.js';
import { importCommand } from './import-command.js';
import { importsCommand } from './imports-command.js';
import { removalCommand } from './removal-command.js';

/**
 * `bulk-import <name> ...`. note: Maps, not objects, so that a word of the command line never
 * finds a property of Object.prototype (a file named toString).
 */
const COMMANDS = new Map<string, Command<CommandOptions>>([['imports', importsCommand]]);

/**
 * `bulk-import listings|machines <name> ...`. note: the name right after the kind is the command;
 * a file so named is given as ./archive.
 */
const KIND_COMMANDS = new Map<string, (kind: ImportKind) => Command<CommandOptions>>([
  ['archive', (kind) => removalCommand(kind, 'archive')],
  ['delete', (kind) => removalCommand(kind, 'delete')],
  ['list', catalogueCommand],
  ['export', exportCommand],
]);

const isKind = (word: string): word is ImportKind => (IMPORT_KIND_NAMES as string[]).includes(word);

/**
 * The command `argv` names, and the arguments that are its own; `bulk-import listings|machines
 * FILE` (importCommand, which reads the kind itself) when it names no other.
 */
export function commandOf(argv: string[]): { command: Command<CommandOptions>; args: string[] } {
  const [first = '', second = ''] = argv;
  const named = COMMANDS.get(first);
  if (named) return { command: named, args: argv.slice(1) };
  const ofKind = KIND_COMMANDS.get(second);
  if (isKind(first) && ofKind) return { command: ofKind(first), args: argv.slice(2) };
  return { command: importCommand, args: argv };
}
