import diagnosticsChannel from 'node:diagnostics_channel';

/** The moments of one import that `npm run bench:phases` times, in the order they happen. */
export const IMPORT_STEPS = [
  'api.body-read',
  'api.validated',
  'api.queued',
  'worker.started',
  'write.recorded',
  'write.inserted',
  'worker.committed',
  'api.finished',
] as const;
export type ImportStep = (typeof IMPORT_STEPS)[number];

export interface ImportStepEvent {
  requestId: string;
  step: ImportStep;
  /** ms on the clock every process of the machine shares (performance.timeOrigin + now()) */
  at: number;
}

export const IMPORT_STEPS_CHANNEL = 'bulk-import-api:import-step';
const importSteps = diagnosticsChannel.channel(IMPORT_STEPS_CHANNEL);

/**
 * Publishes a moment of an import on a diagnostics channel. note: nothing subscribes in
 * production, where this costs one check; the benchmark loads bench/lib/step-recorder.js into
 * the API and worker processes, which writes the moments out so that one import can be followed
 * across processes.
 */
export function markImportStep(requestId: string, step: ImportStep): void {
  if (importSteps.hasSubscribers) {
    const event: ImportStepEvent = { requestId, step, at: performance.timeOrigin + performance.now() };
    importSteps.publish(event);
  }
}
