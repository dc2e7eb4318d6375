import type { Page } from 'playwright-core';
import { afterAll, it } from 'vitest';
import { browserTestTitle, HAS_CHROMIUM, openChromium, type OpenBrowser } from './chromium.js';
import { createFaultScenario, type FaultScenario } from './fault-scenario.js';

export interface BrowserTestSession {
  /** the test's own fault scenario: start its API and workers as the test needs them */
  scenario: FaultScenario;
  /**
   * Opens Chromium and its page; `failed` collects every response of 400 or more the page gets,
   * as `status METHOD url`, from the first request on.
   */
  openPage: (options?: Parameters<typeof openChromium>[0]) => Promise<{ page: Page; failed: string[] }>;
}

/**
 * One test that drives Chromium through `what` against processes of a fault scenario of its own
 * (`env` goes to createFaultScenario). Skipped, with a title that says why, where Chromium is
 * missing; the browser, then the scenario, are closed after it.
 */
export function browserTest(title: string, what: string, env: Record<string, string>, run: (session: BrowserTestSession) => Promise<void>): void {
  let scenario: FaultScenario | undefined;
  let browser: OpenBrowser | undefined;

  afterAll(async () => {
    await browser?.close();
    await scenario?.close();
  });

  it.skipIf(!HAS_CHROMIUM)(browserTestTitle(title, what), async () => {
    scenario = await createFaultScenario(env);
    await run({
      scenario,
      openPage: async (options) => {
        browser = await openChromium(options);
        const { context } = browser;
        const page = context.pages()[0] ?? (await context.newPage());
        const failed: string[] = [];
        page.on('response', (res) => {
          if (res.status() >= 400) failed.push(`${res.status()} ${res.request().method()} ${res.url()}`);
        });
        return { page, failed };
      },
    });
  });
}
