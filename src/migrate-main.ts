import { loadConfig } from './shared/infra/config.js';
import { createLogger } from './shared/infra/logger.js';
import { prepareDatabase } from './shared/infra/prepare-database.js';

/** `npm run migrate`: a one-shot that creates the database if needed and migrates it. */
const config = loadConfig();
const log = createLogger(config, 'migrate');
try {
  await prepareDatabase(config, log);
} catch (err) {
  log.error({ err }, 'migration failed');
  process.exitCode = 1;
}
