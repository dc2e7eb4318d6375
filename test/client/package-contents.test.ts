import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { CLIENT_VERSION } from '@bulk-import/client';

const PACKAGE_DIR = new URL('../../packages/client/', import.meta.url);

/** What `npm publish` of the client package would send: the built package, nothing of the service. */
describe('npm pack of @bulk-import/client', () => {
  it('holds the built JavaScript and its declarations, the README and package.json, and no sources', async () => {
    const { stdout } = await promisify(execFile)('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: PACKAGE_DIR });
    const [packed] = JSON.parse(stdout) as { name: string; version: string; files: { path: string }[] }[];
    const paths = packed!.files.map((file) => file.path).sort();
    expect(packed).toMatchObject({ name: '@bulk-import/client', version: CLIENT_VERSION });
    expect(paths).toEqual(expect.arrayContaining(['README.md', 'package.json', 'dist/index.js', 'dist/index.d.ts', 'dist/generated/openapi.d.ts', 'dist/create-client.js']));
    const other = paths.filter((path) => !/^dist\/.+\.(js|d\.ts)$/.test(path) && path !== 'README.md' && path !== 'package.json');
    expect(other).toEqual([]);
    // note: every module that is built is declared; nothing of src/, scripts/ or the service.
    const js = paths.filter((path) => path.endsWith('.js')).map((path) => path.replace(/\.js$/, ''));
    expect(paths.filter((path) => path.endsWith('.d.ts')).map((path) => path.replace(/\.d\.ts$/, ''))).toEqual(js);
  });

  it('says the version CLIENT_VERSION says', async () => {
    const manifest = JSON.parse(await readFile(new URL('package.json', PACKAGE_DIR), 'utf8')) as { version: string };
    expect(manifest.version).toBe(CLIENT_VERSION);
  });
});
