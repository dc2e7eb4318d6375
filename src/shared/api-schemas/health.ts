import { z } from 'zod';

const CheckSchema = z.enum(['ok', 'down']);

/** `GET /v1/health` (docs/endpoints.md#health): 200 when both dependencies answer, 503 otherwise. */
export const HealthResponseSchema = z
  .object({
    status: z.enum(['ok', 'degraded']),
    version: z.string().meta({ description: 'The service version.' }),
    uptime_sec: z.number().int().nonnegative(),
    checks: z.object({ postgres: CheckSchema, redis: CheckSchema }),
    timestamp: z.iso.datetime(),
  })
  .meta({ id: 'Health' });

export type HealthResponse = z.infer<typeof HealthResponseSchema>;
