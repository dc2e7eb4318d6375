import { freePort, spawnScript, type ServiceProcess } from '../../test/support/processes.js';
import type { BenchEnv } from './stack.js';

/**
 * Starts bench/direct-insert-server.ts on the stack's database; with `recordImports`, each
 * request's rows go with a record of the import, in one transaction. note: with V8's defaults, as
 * the bare route runs, rather than the image's NODE_OPTIONS: what a partner would run.
 */
export async function startDirectInsertServer(env: BenchEnv, options: { recordImports?: boolean } = {}): Promise<ServiceProcess & { baseUrl: string }> {
  const port = await freePort();
  const server = spawnScript('direct-insert', 'bench/direct-insert-server.ts', {
    PORT: String(port),
    DATABASE_URL: env.DATABASE_URL,
    ...(options.recordImports === true ? { DIRECT_RECORD_IMPORTS: '1' } : {}),
  });
  try {
    await server.waitForOutput(/listening/);
  } catch (error) {
    await server.stop();
    throw error;
  }
  return Object.assign(server, { baseUrl: `http://127.0.0.1:${port}` });
}
