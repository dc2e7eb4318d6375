import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { problemsOf } from '../support/compile-as-partner.js';

/** The first ```ts block of `file` after `heading`, its indentation removed. */
async function exampleOf(file: URL, heading: string): Promise<{ text: string; code: string }> {
  const text = await readFile(file, 'utf8');
  const section = text.slice(text.indexOf(heading));
  const block = /^( *)```ts\n([\s\S]*?)^ *```$/m.exec(section);
  if (!block) throw new Error(`${file.pathname}: no \`\`\`ts block after ${heading}`);
  const indent = block[1]!.length;
  return { text, code: block[2]!.split('\n').map((line) => line.slice(indent)).join('\n') };
}

/**
 * The READMEs' client examples compile under --strict --exactOptionalPropertyTypes against the
 * package as built (packages/client/dist, which `npm test` builds first), so what a partner
 * copies works.
 */
describe("the READMEs' client examples", () => {
  it.each([
    { readme: 'README.md', file: new URL('../../README.md', import.meta.url), heading: '## Partners' },
    { readme: 'packages/client/README.md', file: new URL('../../packages/client/README.md', import.meta.url), heading: '# @bulk-import/client' },
  ])('$readme: ten lines with the install command, and they type-check strictly against the built package', async ({ file, heading }) => {
    const { text, code } = await exampleOf(file, heading);
    expect(text).toContain('npm install @bulk-import/client');
    expect(code.trimEnd().split('\n').length + 1).toBeLessThanOrEqual(10);
    const { problems, resolved } = problemsOf(code);
    expect(problems).toEqual([]);
    // note: resolved to the built package, not to its sources
    expect(resolved.some((name) => name.endsWith('packages/client/dist/index.d.ts'))).toBe(true);
  });
});
