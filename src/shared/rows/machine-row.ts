import { z } from 'zod';
import { optionalBoolean, optionalStringArray, optionalText, requiredText } from './field-schemas.js';
import { externalId } from './external-id.js';

export const MACHINE_LIMITS = {
  nickname: 80,
  /** machine categories are not enumerated; they are capped at 80 characters */
  category: 80,
  /** template_id, manufacturer, model, model_number (docs/rows.md#row-sizes) */
  identifier: 200,
  capabilities: 100,
  capability: 80,
} as const;

/**
 * One row of `POST /v1/api/machines/bulk` (docs/rows.md#machines): the fields of the app's CSV
 * import. Every created machine starts with verification status `pending`.
 */
export const MachineRowSchema = z.object({
  external_id: externalId(),
  template_id: requiredText({ maxLength: MACHINE_LIMITS.identifier }),
  category: requiredText({ maxLength: MACHINE_LIMITS.category }).meta({
    description: `Any non-blank text of at most ${MACHINE_LIMITS.category} characters.`,
  }),
  manufacturer: requiredText({ maxLength: MACHINE_LIMITS.identifier }),
  model: requiredText({ maxLength: MACHINE_LIMITS.identifier }),
  model_number: optionalText({ maxLength: MACHINE_LIMITS.identifier }),
  nickname: optionalText({ truncateTo: MACHINE_LIMITS.nickname }).meta({
    description: `Stored up to ${MACHINE_LIMITS.nickname} characters.`,
  }),
  capabilities: optionalStringArray({ maxEntries: MACHINE_LIMITS.capabilities, entryMaxLength: MACHINE_LIMITS.capability }).meta({
    description: `At most ${MACHINE_LIMITS.capabilities} entries of at most ${MACHINE_LIMITS.capability} characters.`,
  }),
  is_skill_station: optionalBoolean(false).meta({ description: 'Default `false`.' }),
});

export type MachineRowInput = z.input<typeof MachineRowSchema>;
export type MachineRow = z.output<typeof MachineRowSchema>;
