import closeWithGrace from 'close-with-grace';
import { loadConfig } from '../shared/infra/config.js';
import { createLogger } from '../shared/infra/logger.js';
import { startWorker } from './worker.js';

const config = loadConfig();
const log = createLogger(config, 'worker');
const running = await startWorker(config, log);

closeWithGrace({ delay: 30_000 }, async ({ signal, err }) => {
  if (err) log.error({ err }, 'worker stopping after an error');
  else log.info({ signal }, 'worker stopping: finishing jobs in hand');
  await running.close();
});
