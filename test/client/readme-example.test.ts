import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { CLIENT_VERSION } from '@bulk-import/client';
import { problemsOf } from '../support/compile-as-partner.js';
import { CLIENT_READMES, exampleOf } from '../support/readme-example.js';

/**
 * The READMEs' client examples compile under --strict --exactOptionalPropertyTypes against the
 * package as built (packages/client/dist, which `npm test` builds first), so what a partner
 * copies works; tarball-install.test.ts installs the package as they say and runs them.
 */
describe("the READMEs' client examples", () => {
  it.each(CLIENT_READMES)('$readme: ten lines with the install command, and they type-check strictly against the built package', async ({ file, heading }) => {
    const { code, install } = await exampleOf(file, heading);
    // note: the release's tarball by its path, never the name: the scope is not published (tarball-install.test.ts)
    expect(install).toBe(`npm install ./bulk-import-client-${CLIENT_VERSION}.tgz`);
    expect(code.trimEnd().split('\n').length + 1).toBeLessThanOrEqual(10);
    const { problems, resolved } = problemsOf(code);
    expect(problems).toEqual([]);
    // note: resolved to the built package, not to its sources
    expect(resolved.some((name) => name.endsWith('packages/client/dist/index.d.ts'))).toBe(true);
  });

  it.each(CLIENT_READMES)('$readme: offers no install of the package by its name from the registry', async ({ file }) => {
    const text = await readFile(file, 'utf8');
    expect(text).not.toMatch(/^\s*npm (install|i|add) @bulk-import\/client/m);
  });
});
