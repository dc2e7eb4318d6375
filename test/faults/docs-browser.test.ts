import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { createFaultScenario, type FaultScenario } from '../support/fault-scenario.js';

const CHROMIUM = '/usr/bin/chromium';
const HAS_CHROMIUM = existsSync(CHROMIUM);
const SCREENSHOT = fileURLToPath(new URL('./artifacts/docs.png', import.meta.url));

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const TITLE = HAS_CHROMIUM
  ? 'a partner opens /docs in Chromium: every endpoint and the changelog render, under the page\'s CSP, from this server alone'
  : `SKIPPED: ${CHROMIUM} is missing (install the Debian package "chromium", as .ci/run does); this test drives a real Chromium through /docs`;

if (!HAS_CHROMIUM) console.warn(`[docs-browser] ${CHROMIUM} not found: the browser test of /docs is skipped. Install it with: apt-get install chromium`);

describe('/docs in a real browser', () => {
  let scenario: FaultScenario | undefined;
  let context: BrowserContext | undefined;
  let userDataDir: string | undefined;

  afterAll(async () => {
    await context?.close();
    if (userDataDir !== undefined) await rm(userDataDir, { recursive: true, force: true });
    await scenario?.close();
  });

  it.skipIf(!HAS_CHROMIUM)(TITLE, async () => {
    scenario = await createFaultScenario();
    const api = await scenario.startApi();

    userDataDir = await mkdtemp(join(tmpdir(), 'docs-chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1400, height: 1000 },
    });
    const page = context.pages()[0] ?? (await context.newPage());
    const requested: string[] = [];
    const failed: string[] = [];
    const consoleErrors: string[] = [];
    page.on('request', (req) => requested.push(req.url()));
    page.on('requestfailed', (req) => failed.push(`${req.method()} ${req.url()}`));
    page.on('response', (res) => {
      if (res.status() >= 400) failed.push(`${res.status()} ${res.request().method()} ${res.url()}`);
    });
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
  });
});
