import type { ListingRow } from './listing-row.js';
import type { MachineRow } from './machine-row.js';

/** The PostgreSQL types a row's columns have. */
export type ColumnType = 'text' | 'integer' | 'double precision' | 'boolean' | 'text[]';

/**
 * The columns of each kind's rows, in the order every statement and every `COPY` of them names
 * them, with their types: the one home of what a row is as PostgreSQL reads it (the insert's
 * record, the temporary table a `COPY` fills, the encoder of copy-rows.ts).
 */
export const ROW_COLUMNS = {
  listings: {
    external_id: 'text', title: 'text', description: 'text', price_cents: 'integer', currency: 'text', category: 'text', material: 'text',
    photo_urls: 'text[]', thumbnail_url: 'text', color: 'text', tags: 'text[]', print_time_hours: 'double precision',
    is_available: 'boolean', allows_custom_orders: 'boolean',
  } satisfies Record<keyof ListingRow, ColumnType>,
  machines: {
    external_id: 'text', template_id: 'text', category: 'text', manufacturer: 'text', model: 'text', model_number: 'text', nickname: 'text',
    capabilities: 'text[]', is_skill_station: 'boolean',
  } satisfies Record<keyof MachineRow, ColumnType>,
} as const satisfies Record<'listings' | 'machines', Record<string, ColumnType>>;
