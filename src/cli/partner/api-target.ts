import { isWellFormedApiKey } from '../../shared/access/api-key.js';
import { isLoopbackHost } from './loopback.js';
import { UsageError } from './usage-error.js';

/** Where requests go and with which key, as every command that talks to the API takes them. */
export interface ApiTarget {
  apiKey: string;
  baseUrl: string;
  /** where `baseUrl` came from, as messages name it */
  baseUrlOrigin: '--base-url' | 'BULK_IMPORT_BASE_URL';
  /** --insecure let a plain http:// base URL to another host through: warn about it */
  insecureHttp: boolean;
}

/** The key and base URL from `--api-key` / `--base-url` or the environment, checked; UsageError otherwise. */
export function apiTargetOf(values: { 'api-key'?: string; 'base-url'?: string; insecure?: boolean }, env: NodeJS.ProcessEnv): ApiTarget {
  const apiKey = values['api-key'] ?? env.BULK_IMPORT_API_KEY;
  const baseUrl = values['base-url'] ?? env.BULK_IMPORT_BASE_URL;
  // note: named in messages, so a URL set long ago in the environment is not mistaken for an option.
  const baseUrlOrigin = values['base-url'] === undefined ? 'BULK_IMPORT_BASE_URL' : '--base-url';
  if (apiKey === undefined || apiKey === '') throw new UsageError('an API key is required: --api-key or BULK_IMPORT_API_KEY');
  // note: checked here because every malformed key the server sees counts toward the IP lockout.
  if (!isWellFormedApiKey(apiKey)) throw new UsageError('the API key is malformed: expected svc_live_<8 hex>_<32 hex>');
  if (baseUrl === undefined || baseUrl === '') throw new UsageError('a base URL is required: --base-url or BULK_IMPORT_BASE_URL');
  // note: not URL.canParse, whose optimised path on Node 20 refuses some valid non-ASCII hosts.
  if (!isHttpOrHttpsUrl(baseUrl)) {
    throw new UsageError(`the base URL must be an http:// or https:// URL (got ${JSON.stringify(baseUrl)})`);
  }
  const inTheClear = sendsKeyInTheClear(baseUrl);
  if (inTheClear && !values.insecure) {
    throw new UsageError(`${baseUrlOrigin} ${baseUrl} sends your API key unencrypted; use https://, or --insecure to send it anyway`);
  }
  return { apiKey, baseUrl, baseUrlOrigin, insecureHttp: inTheClear };
}

/** The warning of --insecure. note: printed even with --quiet: it is about where the key goes. */
export function insecureWarning(target: Pick<ApiTarget, 'baseUrl' | 'baseUrlOrigin'>): string {
  return `${target.baseUrlOrigin} ${target.baseUrl} is plain http://: your API key crosses the network unencrypted (--insecure)`;
}

/** Plain http:// to a host that is not this machine. */
function sendsKeyInTheClear(baseUrl: string): boolean {
  const url = new URL(baseUrl);
  return url.protocol === 'http:' && !isLoopbackHost(url.hostname);
}

function isHttpOrHttpsUrl(value: string): boolean {
  try {
    return /^https?:$/.test(new URL(value).protocol);
  } catch {
    return false;
  }
}
