#!/usr/bin/env node
// Launcher of the partner CLI (`npx bulk-import ...`): the compiled dist/ when it was built,
// else the TypeScript sources through tsx (a runtime dependency), so a fresh clone works too.
import { existsSync } from 'node:fs';
import { fileURLToPath, URL } from 'node:url';

const compiled = new URL('../dist/cli/bulk-import.js', import.meta.url);
if (existsSync(fileURLToPath(compiled))) {
  await import(compiled.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(new URL('../src/cli/bulk-import.ts', import.meta.url).href);
}
