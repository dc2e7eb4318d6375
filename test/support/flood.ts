import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { Agent } from 'undici';

/** One partner floods the API while another imports one row a second and a monitor asks for health. */
export interface FloodOptions {
  baseUrl: string;
  floodKey: string;
  bystanderKey: string;
  /** concurrent imports per burst */
  concurrency: number;
  bursts: number;
  /** the API process, whose peak memory is read from /proc */
  apiPid: number | undefined;
  /** a request that has not finished within this is a hang */
  hangMs?: number;
}

export interface Timed {
  status: number | 'error';
  ms: number;
  retryAfter: boolean;
  /** what failed, when status is 'error' */
  error?: string;
  /** the error body's `code`, for a refusal (so a report says which 503 it was) */
  code?: string;
}

export interface FloodReport {
  flood: Timed[];
  bystander: Timed[];
  health: Timed[];
  /** peak resident set size of the API process, MB */
  apiPeakRssMb: number | null;
  durationMs: number;
}

/** 200 listings of about 10 KB each: just under the 2 MB limit of the listings endpoint. */
export function twoMegabyteListings(): Buffer {
  const rows = Array.from({ length: 200 }, (_, i) => ({
    title: `Flood listing ${i} `.padEnd(120, 'x'),
    description: 'A long description of a print. '.repeat(62),
    price_cents: 1_500,
    currency: 'USD',
    category: 'miniatures',
    material: 'PLA',
    photo_urls: Array.from({ length: 4 }, (_, p) => `https://cdn.example.test/${p}/${'p'.repeat(1_950)}.jpg`),
    tags: ['flood'],
  }));
  return Buffer.from(JSON.stringify({ listings: rows }));
}

function peakRssMb(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Math.round(Number(match[1]) / 1024) : null;
  } catch {
    return null;
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function runFlood(options: FloodOptions): Promise<FloodReport> {
  const { baseUrl, floodKey, bystanderKey, concurrency, bursts, apiPid, hangMs = 120_000 } = options;
  const otherAgent = new Agent({ connections: 8, pipelining: 0 });
  const body = twoMegabyteListings();
  const oneRow = JSON.stringify({ listings: [{ title: 'Bystander', description: 'One row, one a second.', price_cents: 100, currency: 'USD', category: 'gadgets', material: 'PETG', photo_urls: ['https://cdn.example.test/b.jpg'] }] });

  const send = async (agent: Agent, path: string, init: { method: string; key?: string; body?: Buffer | string }): Promise<Timed> => {
    const started = performance.now();
    try {
      const res = await fetch(`${baseUrl}${path}`, {
        method: init.method,
        headers: { ...(init.key ? { authorization: `Bearer ${init.key}` } : {}), ...(init.body ? { 'content-type': 'application/json' } : {}) },
        ...(init.body === undefined ? {} : { body: init.body }),
        signal: AbortSignal.timeout(hangMs),
        // @ts-expect-error undici's dispatcher option on Node's fetch
        dispatcher: agent,
      });
      const text = await res.text();
      const ms = performance.now() - started;
      return { status: res.status, ms, retryAfter: res.headers.has('retry-after'), ...(res.status >= 400 ? { code: errorCode(text) } : {}) };
    } catch {
      return { status: 'error', ms: performance.now() - started, retryAfter: false };
    }
  };

  const report: FloodReport = { flood: [], bystander: [], health: [], apiPeakRssMb: null, durationMs: 0 };
  const started = performance.now();
  let flooding = true;
  const bystander = (async () => {
    for (let i = 0; i < 600 && flooding; i += 1) {
      const tick = pause(1_000);
      report.bystander.push(await send(otherAgent, '/v1/api/listings/bulk', { method: 'POST', key: bystanderKey, body: oneRow }));
      await tick;
    }
  })();
  const health = (async () => {
    for (let i = 0; i < 600 && flooding; i += 1) {
      const tick = pause(1_000);
      report.health.push(await send(otherAgent, '/v1/health', { method: 'GET' }));
      await tick;
    }
  })();
  await pause(1_500);
  // note: the flood runs in a thread of its own, so that pushing its bodies does not delay the
  // bystander's requests in this process: their latency is the service's.
  const flood = new Worker(new URL('./flood-thread.mjs', import.meta.url), {
    workerData: { baseUrl, key: floodKey, body, concurrency, bursts, hangMs },
  });
  const [floodResults] = (await once(flood, 'message')) as [Timed[]];
  report.flood.push(...floodResults);
  await flood.terminate();
  await pause(1_500);
  flooding = false;
  await Promise.all([bystander, health]);
  report.durationMs = performance.now() - started;
  report.apiPeakRssMb = peakRssMb(apiPid);
  await otherAgent.close();
  return report;
}

/** Status counts, e.g. `201 x12, 429 x488`. */
function errorCode(body: string): string {
  try {
    const code = (JSON.parse(body) as { code?: unknown }).code;
    return typeof code === 'string' ? code : 'no code';
  } catch {
    return 'not JSON';
  }
}

/** "201 x5, 503 overloaded x2": each status, with the error code where one was read. */
export function statusCounts(timed: Timed[]): string {
  const counts = new Map<string, number>();
  for (const t of timed) {
    const label = t.code === undefined ? String(t.status) : `${t.status} ${t.code}`;
    counts.set(label, (counts.get(label) ?? 0) + 1);
  }
  return [...counts].sort().map(([status, n]) => `${status} x${n}`).join(', ');
}
