import { readFileSync } from 'node:fs';

// note: ../../../ from src/shared/infra and from dist/shared/infra alike, so the built image reads
// the package.json copied beside dist/.
const packageJson = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };

/** The service's version (package.json): GET /v1/health, the OpenAPI document and bulk_import_build_info. */
export const SERVICE_VERSION = packageJson.version;
