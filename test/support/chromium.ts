import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type LaunchOptions } from 'playwright-core';

/** Debian's Chromium (`apt-get install chromium`, as .ci/run does); playwright never downloads one. */
export const CHROMIUM = '/usr/bin/chromium';
export const HAS_CHROMIUM = existsSync(CHROMIUM);

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

/** The test's title, or one that says why it is skipped when Chromium is missing. */
export function browserTestTitle(title: string, what: string): string {
  if (HAS_CHROMIUM) return title;
  console.warn(`${CHROMIUM} not found: the browser test of ${what} is skipped. Install it with: apt-get install chromium`);
  return `SKIPPED: ${CHROMIUM} is missing (install the Debian package "chromium", as .ci/run does); this test drives a real Chromium through ${what}`;
}

export interface OpenBrowser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** Headless Chromium in a fresh profile directory, removed again by close(). */
export async function openChromium(
  options: Pick<Parameters<typeof chromium.launchPersistentContext>[1] & LaunchOptions, 'httpCredentials'> = {},
): Promise<OpenBrowser> {
  const userDataDir = await mkdtemp(join(tmpdir(), 'bulk-import-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1400, height: 1000 },
    ...options,
  });
  return {
    context,
    async close() {
      await context.close();
      await rm(userDataDir, { recursive: true, force: true });
    },
  };
}
