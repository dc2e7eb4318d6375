import { describe, expect, it } from 'vitest';
import { FILE_ROW_MAX_BYTES } from '../../../../src/shared/import/file/row-bytes.js';
import { EXTERNAL_ID_MAX_LENGTH } from '../../../../src/shared/rows/external-id.js';
import { LISTING_LIMITS, ListingRowSchema } from '../../../../src/shared/rows/listing-row.js';
import { MachineRowSchema } from '../../../../src/shared/rows/machine-row.js';

/** A character of four bytes in UTF-8 (one code point, two UTF-16 units): text counted in code points. */
const wide = (codePoints: number) => '😀'.repeat(codePoints);
/** A character of three bytes in UTF-8 and one UTF-16 unit: a URL's length counts units. */
const wideUnits = (units: number) => '€'.repeat(units);

describe('FILE_ROW_MAX_BYTES (docs/imports.md#whole-files)', () => {
  it('holds the longest row the listing rules need, every character four bytes of UTF-8', () => {
    const url = (n: number) => {
      const head = `https://cdn.example.test/${n}/`;
      return head + wideUnits(LISTING_LIMITS.photoUrl - head.length);
    };
    const row = {
      external_id: wide(EXTERNAL_ID_MAX_LENGTH),
      title: wide(LISTING_LIMITS.title),
      description: wide(LISTING_LIMITS.description),
      price_cents: 2_147_483_647,
      currency: 'USD',
      category: 'electronics',
      material: wide(LISTING_LIMITS.material),
      photo_urls: Array.from({ length: LISTING_LIMITS.photosSent }, (_, n) => url(n)),
      color: wide(LISTING_LIMITS.color),
      tags: Array.from({ length: LISTING_LIMITS.tagsKept }, () => wide(LISTING_LIMITS.tag)),
      print_time_hours: 1234.5,
      is_available: true,
      allows_custom_orders: false,
    };
    const parsed = ListingRowSchema.safeParse(row);
    expect(parsed.success, JSON.stringify(parsed.error?.issues.slice(0, 3))).toBe(true);
    const bytes = Buffer.byteLength(JSON.stringify(row));
    expect(bytes).toBeGreaterThan(600_000);
    expect(bytes).toBeLessThanOrEqual(FILE_ROW_MAX_BYTES);
  });

  it('holds the longest machine row with room to spare', () => {
    const row = {
      external_id: wide(EXTERNAL_ID_MAX_LENGTH),
      template_id: wide(200),
      category: wide(80),
      manufacturer: wide(200),
      model: wide(200),
      model_number: wide(200),
      nickname: wide(80),
      capabilities: Array.from({ length: 100 }, () => wide(80)),
      is_skill_station: true,
    };
    expect(MachineRowSchema.safeParse(row).success).toBe(true);
    expect(Buffer.byteLength(JSON.stringify(row))).toBeLessThan(FILE_ROW_MAX_BYTES / 10);
  });
});
