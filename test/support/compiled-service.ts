import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Compiles the service into dist/ (`npm run build` without its client step, which `npm ci` and
 * `pretest` have done), so a test can run the processes as the Docker image does: plain Node, no
 * tsx. note: built every time it is asked for, never trusted from an earlier run, so the processes
 * always run the code under test; about 8 s.
 */
export async function buildCompiledService(): Promise<void> {
  const tsc = fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url));
  await promisify(execFile)(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: REPO_ROOT, timeout: 120_000 });
}
