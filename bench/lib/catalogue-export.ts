import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type postgres from 'postgres';
import { request } from 'undici';
import { ROW_FIELDS } from '../../src/shared/repositories/catalogue-rows.js';
import type { BenchAccount } from './stack.js';
import { cpuMs, eventLoopOf } from './cpu.js';
import { ratio } from './stats.js';

/** One side of a round: how long the whole catalogue took, and how many bytes it was. */
export interface ExportTiming {
  ms: number;
  bytes: number;
  /** the export's: the API's CPU, its event loop's and its whole process's (threads included) */
  apiLoopCpuMs?: number;
  apiCpuMs?: number;
}

export interface ExportComparison {
  rows: number;
  export: ExportTiming[];
  copy: ExportTiming[];
  /** each round's export time ÷ its COPY's, and their median */
  ratio: { ratio: number; rounds: number[]; target: string };
}

const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Counts what a stream brings, holding none of it. */
const counter = () => {
  const seen = { bytes: 0 };
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      seen.bytes += chunk.length;
      done();
    },
  });
  return { seen, sink };
};

async function timed(run: (sink: Writable) => Promise<void>): Promise<ExportTiming> {
  const { seen, sink } = counter();
  const started = performance.now();
  await run(sink);
  return { ms: Math.round(performance.now() - started), bytes: seen.bytes };
}

/**
 * `GET /v1/api/listings/export` of an account's whole catalogue, read to its end by a client,
 * beside a plain `COPY (select ...) TO STDOUT` of the same rows (the list's columns, the account's
 * active rows in id order) drained by postgres.js: the floor of any export. The two alternate in
 * `rounds`, in turn forwards and backwards; the ratio is the median of the rounds' (target: at
 * most 1.5).
 */
export async function compareExport(input: { sql: postgres.Sql; baseUrl: string; apiPid: number; account: BenchAccount; rows: number; rounds: number }): Promise<ExportComparison> {
  const { sql, account } = input;
  const copyText = `copy (select ${ROW_FIELDS.listings}, created_at, coalesce(updated_at, created_at) as updated_at, archived_at from listings
    where account_id = '${account.id}' and archived_at is null order by account_id, id) to stdout`;
  const viaApi = async (): Promise<ExportTiming> => {
    const [loopBefore, processBefore] = [cpuMs(eventLoopOf(input.apiPid)), cpuMs(input.apiPid)];
    const timing = await timed(async (sink) => {
      const res = await request(`${input.baseUrl}/v1/api/listings/export`, { headers: { authorization: `Bearer ${account.keys[0]}` } });
      if (res.statusCode !== 200) throw new Error(`bench: the export answered ${res.statusCode}: ${await res.body.text()}`);
      await pipeline(res.body, sink);
    });
    return { ...timing, apiLoopCpuMs: cpuMs(eventLoopOf(input.apiPid)) - loopBefore, apiCpuMs: cpuMs(input.apiPid) - processBefore };
  };
  const plainCopy = () => timed(async (sink) => pipeline(await sql.unsafe(copyText).readable(), sink));
  const sides = { export: [] as ExportTiming[], copy: [] as ExportTiming[] };
  for (let round = 0; round < input.rounds; round += 1) {
    const order = round % 2 === 0 ? (['export', 'copy'] as const) : (['copy', 'export'] as const);
    for (const side of order) {
      const timing = await (side === 'export' ? viaApi() : plainCopy());
      const cpu = timing.apiCpuMs === undefined ? '' : `, API CPU ${timing.apiCpuMs} ms (event loop ${timing.apiLoopCpuMs} ms)`;
      console.log(`  export round ${round + 1}: ${side} ${timing.ms} ms, ${(timing.bytes / 2 ** 20).toFixed(0)} MiB${cpu}`);
      sides[side].push(timing);
    }
  }
  const rounds = sides.export.map((timing, n) => ratio(timing.ms, sides.copy[n]!.ms));
  return { rows: input.rows, ...sides, ratio: { ratio: median(rounds), rounds, target: '<= 1.5' } };
}
