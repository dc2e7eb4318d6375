import { main } from './partner/main.js';

/** Entry of the partner CLI (`npx bulk-import ...`, `npm run bulk-import -- ...`). */
process.exitCode = await main(process.argv.slice(2), process.env, { stdout: process.stdout, stderr: process.stderr });
