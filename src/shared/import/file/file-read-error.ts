/**
 * The file cannot be read on (a syntax error, a CSV header naming no field, an I/O error): its
 * reader stops here, after the rows it has already yielded.
 */
export class FileReadError extends Error {}
