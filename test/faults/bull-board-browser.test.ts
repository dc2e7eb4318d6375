import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Response } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { createFaultScenario, type FaultScenario } from '../support/fault-scenario.js';

const CHROMIUM = '/usr/bin/chromium';
const HAS_CHROMIUM = existsSync(CHROMIUM);
const SCREENSHOT = fileURLToPath(new URL('./artifacts/bull-board.png', import.meta.url));
const ADMIN_USER = 'board-ops';
const ADMIN_PASSWORD = 'board-browser-password-0123';

/** Flags for a headless Chromium in a container or CI: no sandbox, GPU, sync or background traffic. */
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
  ? 'an operator logs in to /admin/queues in Chromium, sees the imports queue and a completed job without its rows or any key'
  : `SKIPPED: ${CHROMIUM} is missing (install the Debian package "chromium", as .ci/run does); this test drives a real Chromium through the Bull Board`;

if (!HAS_CHROMIUM) console.warn(`[bull-board-browser] ${CHROMIUM} not found: the browser test of Bull Board is skipped. Install it with: apt-get install chromium`);

describe('Bull Board in a real browser', () => {
  let scenario: FaultScenario | undefined;
  let context: BrowserContext | undefined;
  let userDataDir: string | undefined;

  afterAll(async () => {
    await context?.close();
    if (userDataDir !== undefined) await rm(userDataDir, { recursive: true, force: true });
    await scenario?.close();
  });

  it.skipIf(!HAS_CHROMIUM)(TITLE, async () => {
    scenario = await createFaultScenario({ ADMIN_USER, ADMIN_PASSWORD });
    const api = await scenario.startApi();
    await scenario.startWorker();
    const imported = await scenario.postListings(api.baseUrl, 3);
    expect(imported).toMatchObject({ status: 201, body: { inserted: 3, skipped: 0 } });

    userDataDir = await mkdtemp(join(tmpdir(), 'bull-board-chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      httpCredentials: { username: ADMIN_USER, password: ADMIN_PASSWORD, origin: api.baseUrl },
      viewport: { width: 1400, height: 1000 },
    });
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
    const queueLink = page.getByRole('link', { name: 'imports', exact: true });
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
