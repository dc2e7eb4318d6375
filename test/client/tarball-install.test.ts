import { execFile } from 'node:child_process';
import { copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_VERSION } from '@bulk-import/client';
import { newPartner } from '../support/bulk-endpoint.js';
import { startCliService, type CliService } from '../support/cli-service.js';
import { CLIENT_READMES, exampleOf } from '../support/readme-example.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TSX = join(ROOT, 'node_modules/.bin/tsx');

/**
 * The client package installs the way the READMEs say, until a release publishes it: the tarball
 * `npm run client:pack` makes (its pack step, on the package `npm test` built), installed by the
 * READMEs' command into an empty project, then each README's ten-line example run there against
 * the service and its worker. note: the install is `--offline`: the package has no runtime
 * dependency, so it needs nothing from a registry, and the test proves it.
 */
describe('@bulk-import/client installed from its release tarball', () => {
  let cli: CliService;
  let project: string;

  beforeAll(async () => {
    cli = await startCliService('client-tarball-');
    const { stdout } = await run(TSX, ['packages/client/scripts/pack.ts', join(cli.dir, 'release')], { cwd: ROOT });
    const tarball = stdout.trim();
    expect(basename(tarball)).toBe(`bulk-import-client-${CLIENT_VERSION}.tgz`);
    // note: a partner's new project: nothing but its package.json and the release's tarball
    project = join(cli.dir, 'partner');
    await mkdir(project);
    await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'partner', private: true, type: 'module' }));
    await copyFile(tarball, join(project, basename(tarball)));
    const { install } = await exampleOf(CLIENT_READMES[0]!.file, CLIENT_READMES[0]!.heading);
    const [npm, ...args] = install.split(' ');
    // note: in a partner's shell, not under `npm test`, whose npm_* variables name this repository
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')));
    await run(npm!, [...args, '--offline', '--no-audit', '--no-fund'], { cwd: project, env });
  }, 120_000);
  afterAll(async () => {
    await cli?.close();
  });

  it('is installed by the path the READMEs give, recorded as that file, with no other package', async () => {
    const manifest = JSON.parse(await readFile(join(project, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    expect(manifest.dependencies).toEqual({ '@bulk-import/client': `file:bulk-import-client-${CLIENT_VERSION}.tgz` });
    const installed = JSON.parse(await readFile(join(project, 'node_modules/@bulk-import/client/package.json'), 'utf8')) as { version: string };
    expect(installed.version).toBe(CLIENT_VERSION);
    expect((await readdir(join(project, 'node_modules'))).filter((name) => !name.startsWith('.'))).toEqual(['@bulk-import']);
    // note: the project's import is the installed copy, not the repository's workspace
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', "process.stdout.write(import.meta.resolve('@bulk-import/client'))"], { cwd: project });
    expect(fileURLToPath(stdout)).toBe(join(project, 'node_modules/@bulk-import/client/dist/index.js'));
  });

  it.each(CLIENT_READMES)('$readme: its example runs in that project and imports its row', async ({ readme, file, heading }) => {
    const { code } = await exampleOf(file, heading);
    // note: the partner's own host in place of the example's
    const example = join(project, readme.replaceAll('/', '-').replace(/\.md$/, '.ts'));
    await writeFile(example, code.replace("'https://api.example.com'", JSON.stringify(cli.baseUrl)));
    const { account, key } = await newPartner(cli.service);
    const { stdout } = await run(TSX, [example], { cwd: project, env: { ...process.env, BULK_IMPORT_API_KEY: key } });
    expect(stdout).toMatch(/^1 inserted, 0 skipped; import at \/v1\/api\/imports\/[0-9a-f-]{36}( \(replayed\))?\n$/);
    const stored = await cli.service.sql<{ external_id: string }[]>`select external_id from listings where account_id = ${account.id}`;
    expect(stored).toEqual([{ external_id: 'SKU-1' }]);
  }, 60_000);
});
