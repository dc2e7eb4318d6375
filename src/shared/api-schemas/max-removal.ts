import { z } from 'zod';
import { API_ERRORS } from '../errors/api-errors.js';
import { wholeNumberParameter } from './whole-number.js';

/**
 * A mirror's guard (docs/catalogue.md#mirror), `max_removal`: a whole percentage from 0 to 100,
 * as the file-import route reads it and the partner CLI checks `--max-removal` before sending.
 */
export const MaxRemovalSchema = wholeNumberParameter(z.number({ error: API_ERRORS.maxRemovalMalformed.text }).int().min(0).max(100));
