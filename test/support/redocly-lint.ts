import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const REDOCLY = fileURLToPath(new URL('../../node_modules/.bin/redocly', import.meta.url));

export interface LintProblem {
  ruleId: string;
  severity: 'error' | 'warn';
  message: string;
}

/** Runs `redocly lint` (its recommended rules) on `document`, as a partner's tooling would, and returns its problems. */
export async function redoclyLint(document: unknown): Promise<LintProblem[]> {
  const dir = await mkdtemp(join(tmpdir(), 'redocly-'));
  try {
    const file = join(dir, 'openapi.json');
    await writeFile(file, JSON.stringify(document));
    // note: no telemetry and no update check: the tests reach nothing outside this machine.
    const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' };
    const { stdout } = await promisify(execFile)(REDOCLY, ['lint', file, '--format=json'], { env, maxBuffer: 16 * 1024 * 1024 }).catch(
      // note: redocly exits 1 when it finds an error; its report is still on stdout.
      (error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }),
    );
    const report = JSON.parse(stdout.slice(stdout.indexOf('{'))) as { problems: LintProblem[] };
    return report.problems;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
