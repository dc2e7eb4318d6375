// Loaded with `node --import` into the API and worker processes by `npm run bench:phases`: writes
// each import step the service publishes (src/shared/import/import-steps.ts) to stderr, one JSON line
// each. note: the compiled module, as the processes run dist/; the bench builds it first.
import diagnosticsChannel from 'node:diagnostics_channel';
import process from 'node:process';
import { IMPORT_STEPS_CHANNEL } from '../../dist/shared/import/import-steps.js';

diagnosticsChannel.subscribe(IMPORT_STEPS_CHANNEL, (event) => {
  process.stderr.write(`${JSON.stringify({ importStep: event })}\n`);
});
