import { Readable, Transform } from 'node:stream';
import type { AttemptClient } from '@bulk-import/client';
import { pipeline } from 'node:stream/promises';
import type { ImportKind } from '../../shared/import/import-kinds.js';
import type { ApiContext } from './api-context.js';
import { readingWords } from './call-words.js';
import type { CliIo } from './cli-io.js';
import type { Command } from './command.js';
import { EXPORT_USAGE, parseExportArgs, type ExportOptions } from './export-args.js';
import { FatalError } from './fatal-error.js';
import { printableCell } from './printable.js';
import { runReads } from './read-command.js';
import { refusalOf } from './reply-refusals.js';
import { sendWithPolicy, stopError } from './send-with-policy.js';

/**
 * What the server sent, as safe to show on a terminal as everything else the CLI prints: the
 * characters a terminal acts on written out as `\uXXXX` (printable.ts), line breaks and tabs kept.
 * note: within NDJSON such a character can only be inside a string, where `\uXXXX` means the same.
 */
const printableText = () =>
  new Transform({
    // note: each chunk is a whole string the decoder gave, so no character is split between two
    transform(chunk: Buffer, _encoding, done) {
      done(null, printableCell(chunk.toString('utf8')));
    },
  });

/**
 * `bulk-import listings|machines export [--csv] > FILE`: one request, its answer written to stdout
 * as it streams in, at the pace stdout takes it (a pipe that stops reading holds the server, which
 * drops the export after its idle time). The request is retried by the CLI's policy; a 429
 * `too_many_exports` is waited out as it asks.
 */
type ExportContext = ApiContext & { client: Pick<AttemptClient, 'getExport'> };

async function runExport(ctx: ExportContext, options: ExportOptions, io: CliIo): Promise<number> {
  const query = new URLSearchParams({
    ...(options.csv ? { format: 'csv' } : {}),
    ...(options.archived ? { archived: 'true' } : {}),
    ...(options.updatedSince === undefined ? {} : { updated_since: options.updatedSince }),
  }).toString();
  const path = `v1/api/${options.kind}/export${query === '' ? '' : `?${query}`}`;
  const now = ctx.now ?? Date.now;
  const words = readingWords(path);
  const outcome = await sendWithPolicy(ctx, () => ctx.client.getExport(options.kind, query), { idempotent: true, expected: [200], deadline: now() + options.maxRetryTimeMs }, words);
  if (outcome.type === 'stopped') throw stopError(outcome, 'unknown', words);
  if (outcome.type === 'found') throw new FatalError(`the export of /${path} was not answered`, 'unknown');
  const { reply } = outcome;
  if (reply.status !== 200 || reply.stream === undefined) throw new FatalError(refusalOf(reply, 'unknown').reason, 'unknown');
  const body = Readable.fromWeb(reply.stream.pipeThrough<string>(new TextDecoderStream()));
  try {
    await pipeline(body, printableText(), io.stdout, { end: false });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EPIPE') return 0;
    throw new FatalError(`the export was cut short (${error instanceof Error ? error.message : String(error)}); what was written is not the whole catalogue`, 'unknown');
  }
  return 0;
}

/** `bulk-import listings|machines export ...`. */
export function exportCommand(kind: ImportKind): Command<ExportOptions> {
  return {
    usage: EXPORT_USAGE,
    parse: (args, env) => parseExportArgs(kind, args, env),
    // note: runReads's context is made by createApiContext, whose client is the whole AttemptClient
    run: (options, io) => runReads(options, io, (ctx) => runExport(ctx as ExportContext, options, io)),
  };
}
