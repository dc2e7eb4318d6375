/**
 * The run cannot go on with its files (the input missing, unreadable or truncated, the report not
 * writable): it stops, exit 2, as it does on the readers' FileReadError.
 */
export class InputError extends Error {}
