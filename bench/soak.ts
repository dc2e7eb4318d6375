import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { HOSTILE_MIN_BYTES } from './lib/soak-hostile.js';
import { runSoak, type SoakSummary } from './lib/soak-run.js';
import { startLocalSoakStack } from './lib/soak-stack.js';

/**
 * `npm run soak -- --minutes 15`: partner clients import through the real API and workers for
 * that long, beside slow file uploads trickling their rows, hostile files the API must refuse and
 * catalogue clients keeping their accounts' listings by external_id (upserts, merges, archives,
 * deletes, mirrors), while a worker is SIGKILLed every `--kill-every` seconds and a share of
 * requests hang up; then every row of every import answered 201 (or file answered 202) must be in
 * the tables exactly once, and every row a mirror removed must be one its file left out and that
 * nothing wrote after its upload began. Writes bench/results/soak-<time>.json (the summary) and
 * .log (every process's output).
 */

const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string', default: '15' },
    clients: { type: 'string', default: '8' },
    accounts: { type: 'string', default: '3' },
    workers: { type: 'string', default: '3' },
    'kill-every': { type: 'string', default: '20' },
    'aimed-kill-every': { type: 'string', default: '2' },
    'hang-ups': { type: 'string', default: '0.1' },
    'unserved-after': { type: 'string', default: '180' },
    'capped-limit': { type: 'string', default: '60' },
    'pause-ms': { type: 'string', default: '300' },
    'slow-uploads': { type: 'string', default: '4' },
    hostile: { type: 'string', default: '1' },
    'hostile-mb': { type: 'string', default: '24' },
    'hostile-pause-ms': { type: 'string', default: '2000' },
    'hostile-rss-limit-mb': { type: 'string', default: '128' },
    catalogue: { type: 'string', default: '3' },
    env: { type: 'string', multiple: true, default: [] },
    tamper: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});

if (args.help) {
  console.log(`npm run soak -- [--minutes 15] [--clients 8] [--accounts 3] [--workers 3] [--kill-every 20 (s)]
  [--aimed-kill-every 2 (every nth kill hits a worker inside an import; 0: never)] [--hang-ups 0.1 (share of requests)]
  [--unserved-after 180 (s)] [--capped-limit 60 (s)] [--pause-ms 300 (between a client's imports)]
  [--slow-uploads 4 (file uploads trickling a row every 100-500 ms at once; 0: none)]
  [--hostile 1 (clients sending hostile files; 0: none)] [--hostile-mb 24 (each)] [--hostile-pause-ms 2000]
  [--hostile-rss-limit-mb 128 (the most the API's memory may grow during one)]
  [--catalogue 3 (accounts whose listings a client keeps by external_id, mirrors included; 0: none)]
  [--env NAME=VALUE (for the API and the workers, repeatable: ACCOUNT_MAX_IN_FLIGHT=4, IMPORT_PICKUP_TIMEOUT_MS=1500…)]
  [--tamper (proves the checks fail)]`);
  process.exit(0);
}

function number(name: keyof typeof args, min: number, max: number): number {
  const value = Number(args[name]);
  if (!Number.isFinite(value) || value < min || value > max) {
    console.error(`--${name} must be a number from ${min} to ${max}`);
    process.exit(2);
  }
  return value;
}

const minutes = number('minutes', 0.1, 24 * 60);
const options = {
  durationMs: minutes * 60_000,
  clients: number('clients', 1, 200),
  accounts: number('accounts', 1, 50),
  workers: number('workers', 2, 10),
  killEveryMs: number('kill-every', 1, 3_600) * 1_000,
  aimedKillEvery: number('aimed-kill-every', 0, 1_000),
  hangUpShare: number('hang-ups', 0, 1),
  unservedAfterMs: number('unserved-after', 10, 3_600) * 1_000,
  cappedLimitMs: number('capped-limit', 1, 3_600) * 1_000,
  pauseMs: number('pause-ms', 0, 60_000),
  slowUploads: number('slow-uploads', 0, 40),
  hostileSenders: number('hostile', 0, 2),
  hostileBytes: number('hostile-mb', HOSTILE_MIN_BYTES / 1024 / 1024, 90) * 1024 * 1024,
  hostilePauseMs: number('hostile-pause-ms', 0, 60_000),
  hostileRssLimitMb: number('hostile-rss-limit-mb', 1, 100_000),
  catalogueAccounts: number('catalogue', 0, 20),
  serviceEnv: Object.fromEntries(
    args.env.map((pair) => {
      const at = pair.indexOf('=');
      if (!/^[A-Z][A-Z0-9_]*=/.test(pair)) {
        console.error(`--env takes NAME=VALUE, got ${pair}`);
        process.exit(2);
      }
      return [pair.slice(0, at), pair.slice(at + 1)];
    }),
  ),
  tamper: args.tamper,
};

/** Which code ran: the commit, and the files of src/ and migrations/ that differed from it. */
function codeUnderTest(): { commit: string; uncommitted: string[] } {
  const git = (...argv: string[]) => execFileSync('git', argv, { cwd: fileURLToPath(new URL('..', import.meta.url)), encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    return { commit: git('rev-parse', 'HEAD'), uncommitted: git('status', '--porcelain', '--', 'src', 'migrations').split('\n').filter(Boolean) };
  } catch {
    return { commit: 'unknown', uncommitted: [] };
  }
}

const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const resultsDir = new URL('./results/', import.meta.url);
mkdirSync(resultsDir, { recursive: true });
const logFile = fileURLToPath(new URL(`soak-${stamp}.log`, resultsDir));
const summaryFile = fileURLToPath(new URL(`soak-${stamp}.json`, resultsDir));

const interrupt = new AbortController();
const stack = await startLocalSoakStack();
process.on('SIGINT', () => {
  if (!interrupt.signal.aborted) {
    console.error('soak: interrupted; stopping the load, then checking and cleaning up (Ctrl-C again to kill everything now)');
    interrupt.abort();
    return;
  }
  stack.killAll();
  process.exit(130);
});

// note: a crash of the soak itself must not leave the API and workers running on their own.
const crashed = (error: unknown) => {
  console.error('soak crashed:', error);
  stack.killAll();
  void stack.close().finally(() => process.exit(1));
};
process.on('uncaughtException', crashed);
process.on('unhandledRejection', crashed);

const code = codeUnderTest();
console.error(
  `soak: ${minutes} min, ${options.clients} clients, ${options.accounts} accounts, ${options.slowUploads} slow uploads, ${options.hostileSenders} hostile senders, ${options.catalogueAccounts} catalogue accounts, ` +
    `${options.workers} workers, database ${stack.database}; log ${logFile}`,
);
let summary: SoakSummary;
try {
  summary = await runSoak({ ...options, stack, logFile, signal: interrupt.signal, progress: (line) => console.error(`soak ${line}`) });
} finally {
  await stack.close();
}
const report = { at: new Date().toISOString(), code, ...summary };
writeFileSync(summaryFile, `${JSON.stringify(report, null, 2)}\n`);
console.log(JSON.stringify(report, null, 2));
console.error(`\nsoak: ${summary.verdict.toUpperCase()}${summary.failures.length > 0 ? `\n  - ${summary.failures.join('\n  - ')}` : ''}\nsummary ${summaryFile}\nlog ${logFile}`);
process.exitCode = summary.verdict === 'pass' ? 0 : summary.verdict === 'interrupted' ? 130 : 1;
