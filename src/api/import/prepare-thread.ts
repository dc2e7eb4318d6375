import { setPriority } from 'node:os';
import { prepareImport, type PrepareOutcome, type PrepareRequest } from './prepare-import.js';

/**
 * The niceness of these threads. note: on Linux a thread's priority is its own, so this lowers
 * only the thread it runs in. Without it, on a machine whose cores are all busy, the scheduler
 * gave the event loop no more CPU than each of these threads: a burst of large imports then
 * delayed every other request by seconds although the loop itself had little to do. At nice 10
 * the event loop is served first (about nine to one) and the threads take what is left.
 */
export const PREPARE_THREAD_NICENESS = 10;

let priorityLowered = false;

function lowerThisThreadsPriority(): void {
  priorityLowered = true;
  try {
    setPriority(PREPARE_THREAD_NICENESS);
  } catch {
    // note: where a thread's priority cannot be changed, the threads run at the process's own.
  }
}

export interface PrepareTask extends PrepareRequest {
  bytes: Uint8Array;
}

/**
 * The task each thread of ImportPreparer's pool runs. note: the outcome is copied back to the
 * event loop (structured clone: a memory copy of the encoded rows, well under a millisecond for
 * 2 MB), the parse and validation it replaces take tens of milliseconds.
 */
export default function prepareInThread({ bytes, ...request }: PrepareTask): PrepareOutcome {
  // note: on the first task rather than on import, so that importing this module changes nothing.
  if (!priorityLowered) lowerThisThreadsPriority();
  return prepareImport(request, bytes);
}
