import closeWithGrace from 'close-with-grace';
import { loadConfig } from '../shared/infra/config.js';
import { createLogger, warnAboutDevSecrets } from '../shared/infra/logger.js';
import { startApiServer } from './server.js';

const config = loadConfig();
const log = createLogger(config, 'api');
warnAboutDevSecrets(config, log);
const running = await startApiServer(config, log);

closeWithGrace({ delay: config.importTimeoutMs + 5_000 }, async ({ signal, err }) => {
  if (err) log.error({ err }, 'api stopping after an error');
  else log.info({ signal }, 'api stopping: finishing in-flight requests');
  await running.close();
});
