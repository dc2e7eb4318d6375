import { CLIENT_VERSION } from '@bulk-import/client';
import { SERVICE_VERSION } from '../../shared/infra/service-version.js';

/**
 * The CLI's version. note: the CLI ships in the service's package, so its version is the
 * package's, read where the service reads it (src/shared), never through src/api.
 */
export const CLI_VERSION = SERVICE_VERSION;

/** What `--version` prints: the program's name and its version, as GNU tools do. */
export const VERSION_LINE = `bulk-import ${CLI_VERSION}`;

/** The User-Agent of the CLI's requests: the CLI, then the client package it sends through (product tokens, RFC 9110). */
export const USER_AGENT = `bulk-import-cli/${CLI_VERSION} bulk-import-client/${CLIENT_VERSION}`;
