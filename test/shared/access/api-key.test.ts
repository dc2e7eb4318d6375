import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateApiKey, hashApiKey, hashApiKeyBase64, isWellFormedApiKey } from '../../../src/shared/access/api-key.js';

/**
 * The stored hash (`api_keys.key_hash`) and the name of a key in the API's cache must be the same
 * SHA-256, or every cached key would be looked up under another hash than the one stored.
 */
describe('hashing an API key', () => {
  it('stores the SHA-256 of the key, and names it in the cache by the same digest as base64', () => {
    for (let i = 0; i < 20; i += 1) {
      const { fullKey, hash } = generateApiKey();
      expect(isWellFormedApiKey(fullKey)).toBe(true);
      const sha256 = createHash('sha256').update(fullKey).digest();
      expect(hash.equals(sha256)).toBe(true);
      expect(hashApiKey(fullKey).equals(sha256)).toBe(true);
      expect(hashApiKeyBase64(fullKey)).toBe(sha256.toString('base64'));
    }
  });
});
