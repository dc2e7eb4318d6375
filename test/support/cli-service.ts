import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestService, type TestService, type TestServiceOptions } from './test-service.js';

/** A test service listening on a loopback port, as the partner CLI reaches it, and a folder for its files. */
export interface CliService {
  service: TestService;
  /** `http://127.0.0.1:<port>` */
  baseUrl: string;
  /** a fresh folder for input files and reports, removed on close */
  dir: string;
  close(): Promise<void>;
}

export async function startCliService(folderPrefix: string, options: TestServiceOptions = {}): Promise<CliService> {
  const service = await startTestService(options);
  await service.app.listen({ port: 0, host: '127.0.0.1' });
  const baseUrl = `http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`;
  const dir = await mkdtemp(join(tmpdir(), folderPrefix));
  return {
    service,
    baseUrl,
    dir,
    async close() {
      await service.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
