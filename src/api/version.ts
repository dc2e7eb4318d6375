// note: read in src/shared, so the worker's build-info metric states the same version.
export { SERVICE_VERSION } from '../shared/infra/service-version.js';
