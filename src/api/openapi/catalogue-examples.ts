import { CATALOGUE_PAGE_MAX } from '../../shared/api-schemas/catalogue-rows.js';
import { apiErrors } from '../../shared/errors/api-errors.js';
import type { ImportKind } from '../../shared/import/import-kinds.js';
import { example } from './examples.js';
import type { Examples } from './route-schema.js';

/** The examples of the catalogue's read routes (docs/catalogue.md#reading-rows-back). */

const LISTING = {
  id: '019ab7c2-41d0-7e3a-9b1c-2f4d6e8a0b1c',
  external_id: 'SKU-10442',
  title: 'Articulated dragon',
  description: 'Silk PLA, hand finished.',
  currency: 'USD',
  price_cents: 2500,
  category: 'miniatures',
  material: 'PLA',
  photo_urls: ['https://cdn.example.com/dragon.jpg', 'https://cdn.example.com/dragon-2.jpg'],
  color: null,
  tags: ['dragon', 'flexi'],
  print_time_hours: 14.5,
  is_available: true,
  allows_custom_orders: false,
  thumbnail_url: 'https://cdn.example.com/dragon.jpg',
  maker_name: 'Northern Prints',
  maker_photo_url: 'https://cdn.example.com/makers/northern.png',
  created_at: '2026-11-24T02:00:00.161Z',
  updated_at: '2026-11-25T02:00:01.020Z',
  archived_at: null,
};

const ARCHIVED_LISTING = {
  ...LISTING,
  id: '019ab7c2-41d0-7e3a-9b1c-3a5e7f9b1c2d',
  external_id: 'SKU-10443',
  title: 'Spiral vase',
  tags: [],
  print_time_hours: null,
  updated_at: '2026-11-26T09:12:44.513Z',
  archived_at: '2026-11-26T09:12:44.513Z',
};

const MACHINE = {
  id: '019ab7c3-0a1b-7c2d-8e3f-4a5b6c7d8e9f',
  external_id: 'ASSET-7',
  template_id: 'prusa-mk4',
  category: 'fdm',
  manufacturer: 'Prusa Research',
  model: 'MK4',
  model_number: null,
  nickname: 'Left bench',
  capabilities: ['pla', 'petg'],
  is_skill_station: false,
  verification_status: 'verified',
  created_at: '2026-11-24T02:05:10.002Z',
  updated_at: '2026-11-24T02:05:10.002Z',
  archived_at: null,
};

const ROW: Record<ImportKind, object> = { listings: LISTING, machines: MACHINE };

export function catalogueRowExamples(kind: ImportKind): Examples {
  if (kind === 'machines') return { machine: example('A machine, active, never changed since it was created', MACHINE) };
  return {
    listing: example('A listing, active', LISTING),
    archived: example('An archived listing', ARCHIVED_LISTING, 'It keeps every field and its `external_id`; an import of that `external_id` restores it.'),
  };
}

export function cataloguePageExamples(kind: ImportKind): Examples {
  return {
    page: example(`GET /v1/api/${kind}?limit=1`, { data: [ROW[kind]], has_more: true }, 'Ask for the next page with `starting_after` the last id.'),
    last: example('The last page', { data: [], has_more: false }),
  };
}

export const CATALOGUE_LIST_BAD_REQUEST_EXAMPLES: Examples = {
  limit: example('limit out of range', apiErrors.pageLimitMalformed(CATALOGUE_PAGE_MAX).body),
  startingAfter: example('starting_after is not a row id', apiErrors.rowStartingAfterMalformed().body),
  externalId: example('external_id is no id a row can have', apiErrors.externalIdFilterMalformed().body),
  updatedSince: example('updated_since is not a date and time with a zone', apiErrors.updatedSinceMalformed().body),
  archived: example('archived is neither true nor false', apiErrors.archivedMalformed().body),
  unknownQueryParameter: example('Another query parameter', apiErrors.unknownQueryParameter('status').body),
};

export const CATALOGUE_GET_BAD_REQUEST_EXAMPLES: Examples = {
  unknownQueryParameter: example('A query parameter', apiErrors.unknownQueryParameter('expand').body),
};

export function catalogueNotFoundExamples(kind: ImportKind): Examples {
  return kind === 'listings'
    ? { listingNotFound: example('Not one of the account\'s listings', apiErrors.listingNotFound().body) }
    : { machineNotFound: example('Not one of the account\'s machines', apiErrors.machineNotFound().body) };
}

/** An export's body in each format, of one row (docs/catalogue.md#export). */
export function catalogueExportExamples(kind: ImportKind): { ndjson: string; csv: string } {
  const row = ROW[kind] as Record<string, string | number | boolean | string[] | null>;
  const cell = (value: string | number | boolean | string[] | null) => {
    if (value === null) return '';
    const text = Array.isArray(value) ? value.join('|') : String(value);
    return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
  };
  return {
    ndjson: `${JSON.stringify(row)}\n`,
    csv: `${Object.keys(row).join(',')}\n${Object.values(row).map(cell).join(',')}\n`,
  };
}

export const CATALOGUE_EXPORT_BAD_REQUEST_EXAMPLES: Examples = {
  updatedSince: CATALOGUE_LIST_BAD_REQUEST_EXAMPLES.updatedSince!,
  archived: CATALOGUE_LIST_BAD_REQUEST_EXAMPLES.archived!,
  format: example('format is neither ndjson nor csv', apiErrors.exportFormatMalformed().body),
  unknownQueryParameter: example('Another query parameter', apiErrors.unknownQueryParameter('limit').body),
};

export const TOO_MANY_EXPORTS_EXAMPLE = example('An export of the account is already running', apiErrors.tooManyExports().body);
