import { z } from 'zod';

/** An import's id (docs/imports.md): opaque, at most 64 characters. */
export const ImportIdSchema = z.string().min(1).max(64).meta({
  description: 'The import\'s id: opaque, at most 64 characters. Read the import at `/v1/api/imports/{id}`.',
  examples: ['0b6f2c1e-3d4a-4f8e-9c7f-5a1e0d9b8c76'],
});
