import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const README = new URL('../../README.md', import.meta.url);
/** Where the example is compiled as if it were a partner's file: beside the repository's node_modules. */
const EXAMPLE_FILE = fileURLToPath(new URL('./readme-example.partner.ts', import.meta.url));

/** The TypeScript of the README's partner section: its first ```ts block, its indentation removed. */
async function partnerExample(): Promise<string> {
  const text = await readFile(README, 'utf8');
  const section = text.slice(text.indexOf('## Partners'));
  const block = /^( *)```ts\n([\s\S]*?)^ *```$/m.exec(section);
  if (!block) throw new Error('README.md: no ```ts block in the partners section');
  const indent = block[1]!.length;
  return block[2]!.split('\n').map((line) => line.slice(indent)).join('\n');
}

/**
 * The README's ten lines compile as a partner's strictest project would compile them, against
 * the package as built (packages/client/dist, which `npm test` builds first).
 */
describe("README.md's client example", () => {
  it('is ten lines with the install command, and type-checks under --strict --exactOptionalPropertyTypes against the built package', async () => {
    const code = await partnerExample();
    const text = await readFile(README, 'utf8');
    expect(text).toContain('npm install @bulk-import/client');
    expect(code.trimEnd().split('\n').length + 1).toBeLessThanOrEqual(10);

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
    const problems = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    expect(problems).toEqual([]);
    // note: resolved to the built package, not to its sources
    const resolved = program.getSourceFiles().map((file) => file.fileName).filter((name) => name.includes('packages/client/'));
    expect(resolved.some((name) => name.endsWith('packages/client/dist/index.d.ts'))).toBe(true);
  });
});
