/**
 * The most bytes one row of a file may take: an NDJSON line, a CSV record (docs/imports.md#whole-files).
 * A longer line fails as that row without being parsed; a longer CSV record refuses the file (a CSV
 * file cannot be read on past a record it did not read whole).
 *
 * note: 1 MiB, from the row rules: the longest row they need is a listing whose every checked
 * field is at its limit (100 `photo_urls` of 2,048 characters, the stored text fields at their
 * stored lengths, 10 tags of 80, an `external_id` of 100): about 208,000 characters, some 650 KB
 * with every character as wide in UTF-8 as its rule lets it be (test/shared/import/file/row-bytes.test.ts
 * builds it).
 * It is also the machines' bulk body limit. Text past the stored lengths is only truncated, so a
 * longer row carries nothing that is kept. The bound is what one upload can make the API hold and
 * parse at once, whatever its bytes.
 */
export const FILE_ROW_MAX_BYTES = 1_048_576;
