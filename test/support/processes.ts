import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

const ENTRY = {
  api: 'src/api/main.ts',
  worker: 'src/worker/main.ts',
} as const;

/** The compiled entries (`npm run build`), as the Docker image runs them. */
const COMPILED_ENTRY = {
  api: 'dist/api/main.js',
  worker: 'dist/worker/main.js',
} as const;

export type Part = keyof typeof ENTRY;

/** `source` runs the TypeScript through tsx (tests); `compiled` runs dist/ with plain node (benchmarks). */
export type Runtime = 'source' | 'compiled';

export interface SpawnOptions {
  nodeArgs?: string[];
  runtime?: Runtime;
}

export interface ServiceProcess {
  part: string;
  child: ChildProcess;
  /** stdout and stderr lines so far */
  output: string[];
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** sends SIGTERM (or the given signal) and resolves with the exit code once it has exited */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<number | null>;
  exited: Promise<number | null>;
}

/**
 * `count` distinct ports free now, for the processes of one start. note: each is held until all
 * are chosen, so that two of them can never be the same port (freePort one after another can give
 * back a port it has just handed out, once in some thousands of starts).
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers = Array.from({ length: count }, () => createServer());
  try {
    return await Promise.all(
      servers.map(async (server) => {
        server.listen(0, '127.0.0.1');
        await once(server, 'listening');
        const address = server.address();
        if (address === null || typeof address === 'string') throw new Error('no port');
        return address.port;
      }),
    );
  } finally {
    for (const server of servers) server.close();
  }
}

export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port!;
}

/** Runs the API or a worker as its own Node process, as `npm run start:api|start:worker` would. */
export function spawnPart(part: Part, env: Record<string, string>, options: SpawnOptions = {}): ServiceProcess {
  const entry = options.runtime === 'compiled' ? COMPILED_ENTRY[part] : ENTRY[part];
  return spawnScript(part, entry, env, options.nodeArgs);
}

/** Runs a TypeScript entry of this repository (path relative to its root) as a Node process. */
export function spawnScript(part: string, entry: string, env: Record<string, string>, nodeArgs: string[] = []): ServiceProcess {
  const loader = entry.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const child = spawn(process.execPath, [...nodeArgs, ...loader, entry], {
    cwd: REPO_ROOT,
    // note: JSON lines whatever the shell's LOG_FORMAT, since tests parse them; a test passes
    // LOG_FORMAT: '' to see the default (stdout here is a pipe, never a terminal).
    env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'info', LOG_FORMAT: 'json', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const listeners = new Set<() => void>();
  const collect = (chunk: Buffer) => {
    output.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    for (const listener of listeners) listener();
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  return {
    part,
    child,
    output,
    exited,
    waitForOutput(pattern, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const line = output.find((l) => pattern.test(l));
          if (line !== undefined) {
            done();
            resolve(line);
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`${part}: no output matching ${pattern} within ${timeoutMs} ms; got:\n${output.slice(-20).join('\n')}`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        check();
      });
    },
    async stop(signal = 'SIGTERM', timeoutMs = 30_000) {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** An API process, with the address it answers on. */
export type ApiProcess = ServiceProcess & { baseUrl: string };

export async function startApi(env: Record<string, string>, options: SpawnOptions = {}): Promise<ApiProcess> {
  // note: a PORT in env is kept, so an API can be restarted where its clients expect it.
  const port = env.PORT !== undefined ? Number(env.PORT) : await freePort();
  const api = spawnPart('api', { ...env, PORT: String(port), HOST: '127.0.0.1' }, options);
  const baseUrl = `http://127.0.0.1:${port}`;
  // note: polls the port rather than reading a log line, so any LOG_LEVEL works.
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (api.child.exitCode !== null) throw new Error(`api exited during start:\n${api.output.slice(-20).join('\n')}`);
    const up = await fetch(`${baseUrl}/v1/health`).then(
      () => true, // any answer, even a 503 from a degraded start, means it listens
      () => false,
    );
    if (up) break;
    if (Date.now() > deadline) throw new Error(`api did not answer on ${baseUrl}:\n${api.output.slice(-20).join('\n')}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return Object.assign(api, { baseUrl });
}

export async function startWorkerProcess(env: Record<string, string>, options: SpawnOptions = {}): Promise<ServiceProcess> {
  const worker = spawnPart('worker', env, options);
  await worker.waitForOutput(/worker started/);
  return worker;
}

/** A process's peak resident memory (VmHWM, Linux), in MB. */
export function peakRssMb(pid: number): number {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmHWM for process ${pid}`);
  return Math.round(Number(match[1]) / 1024);
}
