import type { ListingRowInput } from '../../src/shared/rows/listing-row.js';
import type { MachineRowInput } from '../../src/shared/rows/machine-row.js';

let counter = 0;

export function validListing(overrides: Record<string, unknown> = {}): ListingRowInput & Record<string, unknown> {
  counter += 1;
  return {
    title: `Articulated dragon #${counter}`,
    description: 'A fully articulated dragon printed in silk PLA, assembled and checked by hand.',
    price_cents: 2_500,
    currency: 'USD',
    category: 'miniatures',
    material: 'PLA',
    photo_urls: ['https://cdn.example.test/dragon-1.jpg', 'https://cdn.example.test/dragon-2.jpg'],
    ...overrides,
  };
}

export function validMachine(overrides: Record<string, unknown> = {}): MachineRowInput & Record<string, unknown> {
  counter += 1;
  return {
    template_id: `tpl-${counter}`,
    category: 'fdm',
    manufacturer: 'Prusa Research',
    model: 'MK4',
    ...overrides,
  };
}

/** What a listing row that leaves out the optional fields is stored with (docs/rows.md#listings), written out rather than imported. */
export const LISTING_DEFAULTS = { color: null, tags: [], print_time_hours: null, is_available: true, allows_custom_orders: false } as const;

/** What a machine row that leaves out the optional fields is stored with (docs/rows.md#machines), written out rather than imported. */
export const MACHINE_DEFAULTS = { model_number: null, nickname: null, capabilities: [], is_skill_station: false } as const;

export function bearer(token: string): { authorization: string } {
  return { authorization: `Bearer ${token}` };
}
