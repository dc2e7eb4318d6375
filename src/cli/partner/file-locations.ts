import type { SourceRow } from '../../shared/import/file/source-row.js';
import { FatalError } from './fatal-error.js';

/**
 * Turns a file import's row positions (`index`, from 0, in increasing order as its error list
 * has them) into the rows' locations in the file, by reading the file again with the reader the
 * server read it with (src/shared/import/file): the server counts every record its reader yields,
 * readable or not, so the n-th record read here is its row n, and its `location` the line it
 * starts on. One pass, whatever the number of failed rows.
 */
export function fileLocations(rows: AsyncIterable<SourceRow>): { locate(index: number): Promise<number>; close(): Promise<void> } {
  const iterator = rows[Symbol.asyncIterator]();
  let position = -1;
  let location = 0;
  const locate = async (index: number): Promise<number> => {
    while (position < index) {
      const next = await iterator.next();
      if (next.done) {
        throw new FatalError(`the server names row ${index} of the file, which has ${position + 1}: was the file changed after it was sent?`, 'unknown');
      }
      position += 1;
      location = next.value.location;
    }
    if (position !== index) throw new FatalError(`the server's failed rows are not in file order (row ${index} after row ${position})`, 'unknown');
    return location;
  };
  // note: ends the reader early, which closes the file.
  return { locate, close: async () => void (await iterator.return?.()) };
}
