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
import { externalId } from './external-id.js';

export const LISTING_CATEGORIES = [
  'miniatures', 'home_decor', 'cosplay', 'jewelry', 'gadgets', 'art', 'gifts', 'replacement',
  'fashion', 'electronics', 'automotive', 'rc_drones', 'education', 'outdoor', 'other',
] as const;

/** Stored lengths and kept counts (docs/rows.md#listings). */
export const LISTING_LIMITS = {
  title: 120,
  description: 2_000,
  material: 80,
  color: 40,
  photosKept: 8,
  tagsKept: 10,
  /** docs/rows.md#row-sizes: entries a row may send, and the length of each */
  photosSent: 100,
  tagsSent: 100,
  tag: 80,
  photoUrl: 2_048,
} as const;

/**
 * The fields of a listing row, each with its rule: what a merge checks field by field
 * (merge-row.ts).
 */
export const ListingFieldsSchema = z.object({
  external_id: externalId(),
  title: requiredText({ truncateTo: LISTING_LIMITS.title }).meta({
    description: `Trimmed; stored up to ${LISTING_LIMITS.title} characters (longer text is truncated).`,
  }),
  description: requiredText({ truncateTo: LISTING_LIMITS.description }).meta({
    description: `Trimmed; stored up to ${LISTING_LIMITS.description} characters (longer text is truncated).`,
  }),
  // note: currency before price_cents, so reasons read as docs/rows.md#each-row shows them.
  currency: requiredLiteral('USD').meta({ description: 'Exactly `USD`; never defaulted.' }),
  // note: the whole-number rule is a refinement, which JSON Schema cannot see; `type` says it.
  price_cents: wholeNumberInRange().meta({ type: 'integer', description: 'Price in US cents: a JSON whole number, not a string.' }),
  category: requiredEnum(LISTING_CATEGORIES),
  material: requiredText({ truncateTo: LISTING_LIMITS.material }).meta({
    description: `Trimmed; stored up to ${LISTING_LIMITS.material} characters.`,
  }),
  photo_urls: httpsUrlList({ keep: LISTING_LIMITS.photosKept, maxEntries: LISTING_LIMITS.photosSent, maxLength: LISTING_LIMITS.photoUrl }).meta({
    description: `1 to ${LISTING_LIMITS.photosSent} absolute \`https://\` URLs with a host, each at most ${LISTING_LIMITS.photoUrl} characters; every entry is checked, the first ${LISTING_LIMITS.photosKept} are kept and the first is the thumbnail.`,
  }),
  color: optionalText({ truncateTo: LISTING_LIMITS.color }).meta({
    description: `Stored up to ${LISTING_LIMITS.color} characters; blank or null is stored as null.`,
  }),
  tags: optionalStringArray({ keep: LISTING_LIMITS.tagsKept, maxEntries: LISTING_LIMITS.tagsSent, entryMaxLength: LISTING_LIMITS.tag }).meta({
    description: `At most ${LISTING_LIMITS.tagsSent} entries; the first ${LISTING_LIMITS.tagsKept} are kept, each at most ${LISTING_LIMITS.tag} characters.`,
  }),
  print_time_hours: optionalNonNegativeNumber(),
  is_available: optionalBoolean(true).meta({ description: 'Default `true`.' }),
  allows_custom_orders: optionalBoolean(false).meta({ description: 'Default `false`.' }),
});

/**
 * One row of `POST /v1/api/listings/bulk` (docs/rows.md#listings). Parsing yields the row as it is
 * stored: trimmed, truncated, defaults applied, unknown fields dropped.
 */
export const ListingRowSchema = ListingFieldsSchema
  // note: zod's output is a fresh object; adding the field to it costs less than copying it.
  .transform((row) => Object.assign(row, { thumbnail_url: row.photo_urls[0] as string }));

export type ListingRowInput = z.input<typeof ListingRowSchema>;
export type ListingRow = z.output<typeof ListingRowSchema>;
