import { PassThrough } from 'node:stream';
import { main } from '../../src/cli/partner/main.js';

/** A well-formed API key no server knows. */
export const WELL_FORMED_KEY = `svc_live_0123abcd_${'0'.repeat(32)}`;

export interface PartnerCliRun {
  /** what it printed on stderr so far */
  stderr(): string;
  /** its exit status and everything it printed */
  done: Promise<{ code: number; stdout: string; stderr: string }>;
}

/** Starts the partner CLI in this process; `stderr()` shows its notices as they come. */
export function startPartnerCli(args: string[], env: NodeJS.ProcessEnv = {}): PartnerCliRun {
  const stdout = new PassThrough();
  const stderr = new PassThrough() as unknown as NodeJS.WriteStream;
  let out = '';
  let err = '';
  stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  (stderr as unknown as PassThrough).on('data', (chunk: Buffer) => (err += chunk.toString()));
  const done = main(args, env, { stdout, stderr }).then((code) => ({ code, stdout: out, stderr: err }));
  return { stderr: () => err, done };
}

/** Runs the partner CLI in this process and returns its exit status and everything it printed. */
export async function runPartnerCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return startPartnerCli(args, env).done;
}
