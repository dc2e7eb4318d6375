// The flood of runFlood (flood.ts), in a thread of its own, so that pushing hundreds of 2 MB
// bodies does not delay the bystander's and the health monitor's requests in the load
// generator itself. Plain JavaScript: worker threads do not go through the TypeScript loader.
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { Agent } from 'undici';

const { baseUrl, key, body, concurrency, bursts, hangMs } = workerData;
const { fetch, AbortSignal } = globalThis;
const agent = new Agent({ connections: null, pipelining: 0 });

async function send() {
  const started = performance.now();
  try {
    const res = await fetch(`${baseUrl}/v1/api/listings/bulk`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body,
      signal: AbortSignal.timeout(hangMs),
      dispatcher: agent,
    });
    await res.arrayBuffer();
    return { status: res.status, ms: performance.now() - started, retryAfter: res.headers.has('retry-after') };
  } catch (error) {
    return { status: 'error', ms: performance.now() - started, retryAfter: false, error: String(error?.cause?.code ?? error?.cause?.message ?? error?.message) };
  }
}

const results = [];
for (let b = 0; b < bursts; b += 1) {
  results.push(...(await Promise.all(Array.from({ length: concurrency }, send))));
}
await agent.close();
parentPort.postMessage(results);
