import { setPriority } from 'node:os';
import { move, transferableSymbol, valueSymbol } from 'piscina';
import { prepareImport, type PrepareOutcome, type PrepareRequest } from './prepare-import.js';
import { isImportRefusal } from './import-refusal.js';

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
  /** this pool's threads run below the event loop (large bodies: PREPARE_THREAD_NICENESS) */
  lowPriority: boolean;
}

/**
 * A prepared import whose rows (and hash) move to the event loop rather than being copied: piscina
 * transfers what `transferableSymbol` lists and hands over `valueSymbol` (its Transferable).
 */
class MovedPreparation {
  constructor(private readonly outcome: PrepareOutcome) {}

  get [transferableSymbol](): ArrayBufferLike[] {
    if (isImportRefusal(this.outcome)) return [];
    const { rows, hash } = this.outcome;
    return hash ? [rows.buffer, hash.buffer] : [rows.buffer];
  }

  get [valueSymbol](): PrepareOutcome {
    return this.outcome;
  }
}

/**
 * The task each thread of ImportPreparer's pools runs. note: the encoded rows move back to the
 * event loop (their memory changes hands, nothing is copied); the rest of the outcome (counts
 * and row errors) is copied.
 */
export default function prepareInThread({ bytes, lowPriority, ...request }: PrepareTask): PrepareOutcome {
  // note: on the first task rather than on import, so that importing this module changes nothing.
  if (lowPriority && !priorityLowered) lowerThisThreadsPriority();
  const outcome = prepareImport(request, bytes);
  if (isImportRefusal(outcome) || !ownsItsMemory(outcome.rows) || (outcome.hash && !ownsItsMemory(outcome.hash))) return outcome;
  return move(new MovedPreparation(outcome)) as unknown as PrepareOutcome;
}

/** Whether moving these bytes' memory moves nothing else (a Buffer from Node's shared pool would). */
export function ownsItsMemory(bytes: Uint8Array): boolean {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
}
