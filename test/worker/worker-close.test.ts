import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorker } from '../../src/worker/worker.js';
import { startTestService, type TestService } from '../support/test-service.js';

const CLOSES = 30;
const CLOSE_WITHIN_MS = 10_000;

/** Rejects when `closing` has not settled within `ms`, naming the attempt. */
function within(closing: Promise<void>, ms: number, attempt: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`close ${attempt} still running after ${ms} ms`)), ms);
  });
  return Promise.race([closing, hung]).finally(() => clearTimeout(timer));
}

describe('a worker closed right after its start', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ worker: false });
  });
  afterAll(async () => {
    await service?.close();
  });

  // note: on a Redis Cluster (npm run test:cluster), BullMQ's close raced its own recovery of the
  // blocking connection and could wait forever (src/worker/close-queue-worker.ts); on a busy
  // machine one close in ten hung.
  it(`closes, ${CLOSES} times in a row, each within ${CLOSE_WITHIN_MS / 1000} s`, async () => {
    let closed = 0;
    for (let attempt = 1; attempt <= CLOSES; attempt += 1) {
      const worker = await startWorker(service.config, service.deps.log.child({ part: 'worker', attempt }));
      await within(worker.close(), CLOSE_WITHIN_MS, attempt);
      closed += 1;
    }
    expect(closed).toBe(CLOSES);
  }, CLOSES * (CLOSE_WITHIN_MS + 5_000));
});
