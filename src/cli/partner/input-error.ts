/** The input file cannot be read on (syntax error, bad header, I/O error): the run stops, exit 2. */
export class InputError extends Error {}
