import type { Worker } from 'bullmq';

/** The private switch of BullMQ's blocking cluster connection (bullmq 6.7, redis-connection.ts). */
interface BlockingClusterConnection {
  disableBlockingClusterReconnect?: () => void;
}

/**
 * Closes a BullMQ worker: it finishes the jobs in hand and takes no new one.
 *
 * note: on a Redis Cluster, BullMQ 6.7's close() can hang for good. It disconnects the worker's
 * blocking client and waits for its 'end'; meanwhile the worker's loop, whose BZPOPMIN that
 * disconnect broke, finds the client without nodes and has BullMQ's cluster recovery connect it
 * again, so 'end' never comes (a race of the kind bullmq#4722 closed on the 5.x line). close()
 * switches the recovery off itself, but only a step later; switching it off first is the same
 * step, earlier. Found by `npm run test:cluster` (a worker closed right after its start, on a busy
 * machine: one close in ten hung). A BullMQ without the private switch is closed as it is.
 */
export function closeQueueWorker<Data, Result>(worker: Worker<Data, Result>): Promise<void> {
  const blocking = worker.backend.blockingConnection as BlockingClusterConnection | undefined;
  blocking?.disableBlockingClusterReconnect?.call(blocking);
  return worker.close();
}
