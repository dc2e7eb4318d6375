/** Where a command of the partner CLI writes: its result to stdout, progress and notices to stderr. */
export interface CliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WriteStream;
}
