import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect } from 'vitest';
import { browserTest } from '../support/browser-test.js';

const SCREENSHOT = fileURLToPath(new URL('./artifacts/docs.png', import.meta.url));

describe('/docs in a real browser', () => {
  browserTest(
    'a partner opens /docs in Chromium: every endpoint and the changelog render, under the page\'s CSP, from this server alone',
    '/docs',
    {},
    async ({ scenario, openPage }) => {
      const api = await scenario.startApi();

      const { page, failed } = await openPage();
      const requested: string[] = [];
      const consoleErrors: string[] = [];
      page.on('request', (req) => requested.push(req.url()));
      page.on('requestfailed', (req) => failed.push(`${req.method()} ${req.url()}`));
      // note: a CSP violation (anything the page tried to load from elsewhere) is a console error.
      page.on('console', (message) => {
        if (message.type() === 'error') consoleErrors.push(message.text());
      });

      const entry = await page.goto(`${api.baseUrl}/docs`);
      expect(entry?.status()).toBe(200);
      await page.locator('.swagger-ui .info .title').filter({ hasText: 'Bulk Import API' }).waitFor({ state: 'visible', timeout: 20_000 });
      for (const path of ['/v1/api/me', '/v1/api/machines/bulk', '/v1/api/listings/bulk', '/v1/api/keys', '/v1/api/keys/{id}', '/v1/health']) {
        await expect(page.locator('.opblock-summary-path', { hasText: path }).first().isVisible()).resolves.toBe(true);
      }
      const info = await page.locator('.swagger-ui .info').innerText();
      expect(info).toContain('Changelog');
      expect(info).toMatch(/0\.1\.0 — 2026-11-22/);
      expect(info).toContain('Idempotency-Key');

      // Opening an operation shows its responses and examples, and no control sends a request.
      await page.locator('.opblock-summary-path', { hasText: '/v1/api/listings/bulk' }).first().click();
      await page.getByText('A row skipped').first().waitFor({ state: 'attached', timeout: 10_000 });
      expect(await page.getByRole('button', { name: /try it out/i }).count()).toBe(0);

      expect(requested.length).toBeGreaterThan(3);
      expect(requested.filter((url) => !url.startsWith(`${api.baseUrl}/`))).toEqual([]);
      expect(failed).toEqual([]);
      expect(consoleErrors).toEqual([]);

      await mkdir(dirname(SCREENSHOT), { recursive: true });
      await page.screenshot({ path: SCREENSHOT, fullPage: false });
    },
  );
});
