import { z } from 'zod';
import { fitsCodePoints, POSTGRES_INT_MAX } from '../../src/shared/rows/field-schemas.js';
import { LISTING_CATEGORIES, LISTING_LIMITS, type ListingRow } from '../../src/shared/rows/listing-row.js';
import { MACHINE_LIMITS, type MachineRow } from '../../src/shared/rows/machine-row.js';

/**
 * The shape of a row after the input schemas normalised it: the oracle the validation
 * properties check every accepted row against. No transforms here: re-running the input
 * schemas would trim again and change a truncated value that ends in a space.
 */

const noNul = (s: string) => !s.includes('\u0000');
const text = (max?: number) =>
  z.string().refine((s) => noNul(s) && s.isWellFormed() && (max === undefined || fitsCodePoints(s, max)));
const requiredText = (max?: number) => text(max).refine((s) => s.length > 0);
const nullableText = (max?: number) => text(max).nullable();

export const StoredListingSchema = z.strictObject({
  external_id: requiredText(100).optional(),
  title: requiredText(LISTING_LIMITS.title),
  description: requiredText(LISTING_LIMITS.description),
  currency: z.literal('USD'),
  price_cents: z.number().int().min(0).max(POSTGRES_INT_MAX),
  category: z.enum(LISTING_CATEGORIES),
  material: requiredText(LISTING_LIMITS.material),
  photo_urls: z.array(requiredText()).min(1).max(LISTING_LIMITS.photosKept),
  thumbnail_url: requiredText(),
  color: nullableText(LISTING_LIMITS.color),
  tags: z.array(text()).max(LISTING_LIMITS.tagsKept),
  print_time_hours: z.number().min(0).nullable(),
  is_available: z.boolean(),
  allows_custom_orders: z.boolean(),
}) satisfies z.ZodType<ListingRow>;

export const StoredMachineSchema = z.strictObject({
  external_id: requiredText(100).optional(),
  template_id: requiredText(),
  category: requiredText(MACHINE_LIMITS.category),
  manufacturer: requiredText(),
  model: requiredText(),
  model_number: nullableText(),
  nickname: nullableText(MACHINE_LIMITS.nickname),
  capabilities: z.array(text()),
  is_skill_station: z.boolean(),
}) satisfies z.ZodType<MachineRow>;
