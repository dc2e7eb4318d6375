/** Where an import is read (GET), and what every answer that names an import sends as `Location`. */
export const IMPORTS_PATH = '/v1/api/imports';

export function importLocation(importId: string): string {
  return `${IMPORTS_PATH}/${encodeURIComponent(importId)}`;
}
