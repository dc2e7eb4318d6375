import { InputError } from './input-error.js';
import { ReportWriter, type ReportFormat } from './report.js';

/**
 * Opens --report's file before anything is read or sent. note: a report that cannot be written is
 * an input error (exit status 2): a run must not send rows whose failures it could not record.
 */
export async function openReport(report: { path: string; format: ReportFormat }, locationName: 'line' | 'index'): Promise<ReportWriter> {
  try {
    return await ReportWriter.open(report.path, report.format, locationName);
  } catch (error) {
    throw new InputError(`cannot write the report ${report.path}: ${(error as Error).message}`);
  }
}
