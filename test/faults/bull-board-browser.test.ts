import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Response } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { browserTestTitle, HAS_CHROMIUM, openChromium, type OpenBrowser } from '../support/chromium.js';
import { createFaultScenario, type FaultScenario } from '../support/fault-scenario.js';

const SCREENSHOT = fileURLToPath(new URL('./artifacts/bull-board.png', import.meta.url));
const ADMIN_USER = 'board-ops';
const ADMIN_PASSWORD = 'board-browser-password-0123';

const TITLE = browserTestTitle(
  'an operator logs in to /admin/queues in Chromium, sees the imports queue and a completed job without its rows or any key',
  'the Bull Board',
);

describe('Bull Board in a real browser', () => {
  let scenario: FaultScenario | undefined;
  let browser: OpenBrowser | undefined;

  afterAll(async () => {
    await browser?.close();
    await scenario?.close();
  });

  it.skipIf(!HAS_CHROMIUM)(TITLE, async () => {
    scenario = await createFaultScenario({ ADMIN_USER, ADMIN_PASSWORD });
    const api = await scenario.startApi();
    await scenario.startWorker();
    const imported = await scenario.postListings(api.baseUrl, 3);
    expect(imported).toMatchObject({ status: 201, body: { inserted: 3, skipped: 0 } });

    browser = await openChromium({
      httpCredentials: { username: ADMIN_USER, password: ADMIN_PASSWORD, origin: api.baseUrl },
    });
    const { context } = browser;
    const page = context.pages()[0] ?? (await context.newPage());
    const failed: string[] = [];
    page.on('response', (res: Response) => {
      if (res.status() >= 400) failed.push(`${res.status()} ${res.request().method()} ${res.url()}`);
    });

    // Without credentials the board refuses; the browser context answers the challenge.
    const anonymous = await fetch(`${api.baseUrl}/admin/queues`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Basic realm="bulk-import admin"');
    await anonymous.body?.cancel();

    const entry = await page.goto(`${api.baseUrl}/admin/queues`);
    expect(entry?.status()).toBe(200);
    // note: the sidebar's link; the overview may list the queue a second time once it has loaded.
    const queueLink = page.locator('#bull-board-sidebar').getByRole('link', { name: 'imports', exact: true });
    await queueLink.waitFor({ state: 'visible', timeout: 20_000 });

    await queueLink.click();
    await page.getByRole('link', { name: /completed/i }).click();
    const accountId = scenario.accountId;
    const jobCard = page.getByText(`"${accountId}"`);
    await jobCard.waitFor({ state: 'visible', timeout: 20_000 });

    const text = await page.locator('body').innerText();
    expect(text).toMatch(new RegExp(`accountId:\\s*"${accountId}"`));
    expect(text).toMatch(/rows:\s*3\b/);
    expect(text).toMatch(/kind:\s*"listings"/);
    const html = await page.content();
    expect(html).not.toContain('svc_live_');
    expect(html).not.toContain(scenario.apiKey);
    expect(html).not.toContain('Articulated dragon');
    // Read-only: no control to retry, remove or promote a job.
    expect(await page.getByRole('button', { name: /retry|clean|remove|promote|duplicate/i }).count()).toBe(0);
    // note: every request of the board succeeded with the CORS check in place (a foreign Origin
    // gets 403): the board's same-origin GETs carry no Origin header.
    expect(failed).toEqual([]);

    await mkdir(dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
  });
});
