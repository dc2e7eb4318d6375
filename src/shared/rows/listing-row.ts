import { z } from 'zod';
import {
  httpsUrlList,
  optionalBoolean,
  optionalNonNegativeNumber,
  optionalStringArray,
  optionalText,
  requiredEnum,
  requiredLiteral,
  requiredText,
  wholeNumberInRange,
} from './field-schemas.js';

export const LISTING_CATEGORIES = [
  'miniatures', 'home_decor', 'cosplay', 'jewelry', 'gadgets', 'art', 'gifts', 'replacement',
  'fashion', 'electronics', 'automotive', 'rc_drones', 'education', 'outdoor', 'other',
] as const;

/** Stored lengths and kept counts (spec 8). */
export const LISTING_LIMITS = {
  title: 120,
  description: 2_000,
  material: 80,
  color: 40,
  photosKept: 8,
  tagsKept: 10,
} as const;

/**
 * One row of `POST /v1/api/listings/bulk` (spec 2.4, decisions A). Parsing yields the row as it is
 * stored: trimmed, truncated, defaults applied, unknown fields dropped.
 */
export const ListingRowSchema = z
  .object({
    title: requiredText({ truncateTo: LISTING_LIMITS.title }),
    description: requiredText({ truncateTo: LISTING_LIMITS.description }),
    // note: currency before price_cents, so reasons read as decisions A shows them.
    currency: requiredLiteral('USD'),
    price_cents: wholeNumberInRange(),
    category: requiredEnum(LISTING_CATEGORIES),
    material: requiredText({ truncateTo: LISTING_LIMITS.material }),
    photo_urls: httpsUrlList(LISTING_LIMITS.photosKept),
    color: optionalText({ truncateTo: LISTING_LIMITS.color }),
    tags: optionalStringArray({ keep: LISTING_LIMITS.tagsKept }),
    print_time_hours: optionalNonNegativeNumber(),
    is_available: optionalBoolean(true),
    allows_custom_orders: optionalBoolean(false),
  })
  .transform((row) => ({ ...row, thumbnail_url: row.photo_urls[0] as string }));

export type ListingRowInput = z.input<typeof ListingRowSchema>;
export type ListingRow = z.output<typeof ListingRowSchema>;
