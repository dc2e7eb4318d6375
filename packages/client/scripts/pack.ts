/**
 * `npm run client:pack [-- DIR]`: the client package as partners install it until a release
 * publishes it to the registry (README.md, packages/client/README.md): `npm pack` of
 * packages/client as built, into DIR (release/ by default), as bulk-import-client-<version>.tgz,
 * whose path it prints. note: installed by its path, the tarball a release ships is the code
 * partners get; a scope never published to the registry could be claimed there by anyone.
 */
import { execFile } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url));

const destination = resolve(process.argv[2] ?? 'release');
// note: npm pack refuses a destination that does not exist
await mkdir(destination, { recursive: true });
const { stdout } = await promisify(execFile)('npm', ['pack', '--json', '--pack-destination', destination], { cwd: PACKAGE_DIR });
const [packed] = JSON.parse(stdout) as { filename: string }[];
process.stdout.write(`${join(destination, packed!.filename)}\n`);
