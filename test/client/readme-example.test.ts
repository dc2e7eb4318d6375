import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/** Where an example is compiled as if it were a partner's file: beside the repository's node_modules. */
const EXAMPLE_FILE = fileURLToPath(new URL('./readme-example.partner.ts', import.meta.url));

/** The first ```ts block of `file` after `heading`, its indentation removed. */
async function exampleOf(file: URL, heading: string): Promise<{ text: string; code: string }> {
  const text = await readFile(file, 'utf8');
  const section = text.slice(text.indexOf(heading));
  const block = /^( *)```ts\n([\s\S]*?)^ *```$/m.exec(section);
  if (!block) throw new Error(`${file.pathname}: no \`\`\`ts block after ${heading}`);
  const indent = block[1]!.length;
  return { text, code: block[2]!.split('\n').map((line) => line.slice(indent)).join('\n') };
}

/** The compiler's complaints about `code`, compiled as a partner's strictest project would, against the built package. */
function problemsOf(code: string): { problems: string[]; resolved: string[] } {
  const options: ts.CompilerOptions = {
    strict: true,
    exactOptionalPropertyTypes: true,
    noUncheckedIndexedAccess: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2023,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: ['node'],
    // note: the package's own declarations are checked too, as a partner's compiler would
    skipLibCheck: false,
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, language, ...rest) =>
    fileName === EXAMPLE_FILE ? ts.createSourceFile(fileName, code, language) : getSourceFile(fileName, language, ...rest);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (fileName) => fileName === EXAMPLE_FILE || fileExists(fileName);
  const program = ts.createProgram([EXAMPLE_FILE], options, host);
  return {
    problems: ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')),
    resolved: program.getSourceFiles().map((file) => file.fileName),
  };
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
