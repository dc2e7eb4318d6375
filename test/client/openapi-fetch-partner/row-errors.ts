/**
 * A partner's own code over openapi-fetch and the types openapi-typescript renders from the
 * served document (the package's rendering, which the drift test keeps equal to a fresh one):
 * a rejected import's row errors read without a cast. Compiled alone by its tsconfig.json,
 * strictly; row-errors.test.ts runs it against the service too.
 */
import createClient from 'openapi-fetch';
import type { paths } from '../../../packages/client/src/generated/openapi.js';

export interface FirstRowProblem {
  status: number;
  index: number;
  reason: string;
  field: string | null;
  code: string;
}

/** Sends one listing the service refuses (a price that is not whole cents) and reads why from the 400. */
export async function firstRowProblem(baseUrl: string, apiKey: string): Promise<FirstRowProblem | undefined> {
  const client = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${apiKey}` } });
  const { error, response } = await client.POST('/v1/api/listings/bulk', {
    body: {
      listings: [
        { title: 'Spiral vase', description: 'Vase mode.', price_cents: 12.5, currency: 'USD', category: 'home_decor', material: 'PETG', photo_urls: ['https://cdn.example.com/vase.jpg'] },
      ],
    },
  });
  if (error === undefined || !('errors' in error) || error.errors === undefined) return undefined;
  const row = error.errors[0];
  const detail = row?.details[0];
  if (row === undefined || detail === undefined) return undefined;
  return { status: response.status, index: row.index, reason: row.reason, field: detail.field, code: detail.code };
}
