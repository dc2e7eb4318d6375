import { PassThrough } from 'node:stream';
import { main } from '../../src/cli/partner/main.js';

/** A well-formed API key no server knows. */
export const WELL_FORMED_KEY = `svc_live_0123abcd_${'0'.repeat(32)}`;

/** Runs the partner CLI in this process and returns its exit status and everything it printed. */
export async function runPartnerCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough() as unknown as NodeJS.WriteStream;
  let out = '';
  let err = '';
  stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  (stderr as unknown as PassThrough).on('data', (chunk: Buffer) => (err += chunk.toString()));
  const code = await main(args, env, { stdout, stderr });
  return { code, stdout: out, stderr: err };
}
