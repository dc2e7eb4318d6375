import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** Where code is compiled as if it were a partner's file (it exists only in memory): beside the repository's node_modules. */
const EXAMPLE_FILE = fileURLToPath(new URL('../client/as-a-partner.ts', import.meta.url));

/** The compiler's complaints about `code`, compiled as a partner's strictest project would, against the built package. */
export function problemsOf(code: string): { problems: string[]; resolved: string[] } {
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
