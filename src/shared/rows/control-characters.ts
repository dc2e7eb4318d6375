/**
 * C0 and C1 control characters, DEL, and the bidirectional controls (U+061C, U+200E, U+200F,
 * U+202A-U+202E, U+2066-U+2069). note: key labels and partners' ids are shown in the app and in
 * terminals; these would move the cursor, clear the screen or reverse the text around them
 * (docs/access.md#api-keys, docs/rows.md#external-id).
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
export const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
