import { spawn } from 'node:child_process';

/**
 * What `promtool check metrics` may say of our scrapes, and nothing else (docs/operators.md#metrics):
 * prom-client's default process metrics name three gauges with a counter's `_total` suffix. Kept as
 * they are: prom-client cannot rename them, and the usual Node.js dashboards read these names.
 */
export const ACCEPTED_FINDINGS = [
  'nodejs_active_handles_total non-counter metrics should not have "_total" suffix',
  'nodejs_active_requests_total non-counter metrics should not have "_total" suffix',
  'nodejs_active_resources_total non-counter metrics should not have "_total" suffix',
];

/**
 * `promtool check metrics` on a scrape: the lint findings it prints, one a line (`<metric> <problem>`).
 * note: a missing promtool fails the test, as in prometheus-rules.ts: CI installs it (Debian's
 * `prometheus` package).
 */
export function promtoolCheckMetrics(exposition: string): Promise<{ exitCode: number; findings: string[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn('promtool', ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.once('error', (error: NodeJS.ErrnoException) => {
      reject(error.code === 'ENOENT' ? new Error('promtool is not installed: apt-get install prometheus (Debian), as .ci/run does, or put promtool on PATH') : error);
    });
    child.once('close', (code) => resolve({ exitCode: code ?? 1, findings: output.split('\n').map((line) => line.trim()).filter(Boolean) }));
    // note: a promtool that failed to start closes its stdin; the error above says why.
    child.stdin.on('error', () => undefined);
    child.stdin.end(exposition);
  });
}
