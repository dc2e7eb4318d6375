import { stat } from 'node:fs/promises';
import { InputError } from './input-error.js';

/** Refuses a file that is not there or not a regular file before anything is opened or sent. */
export async function checkReadable(file: string): Promise<void> {
  try {
    const info = await stat(file);
    if (!info.isFile()) throw new Error('not a regular file');
  } catch (error) {
    throw new InputError(`cannot read ${file}: ${(error as Error).message}`);
  }
}
