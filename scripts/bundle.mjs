// Bundles the operator commands into plain ESM files under dist/ (part of `npm run build`), so the
// image runs them with node alone: no tsx, no TypeScript, no node_modules beyond the standalone
// build's (the database drivers, pino and prom-client, which stay external, are there: serverExternalPackages).
import { build } from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// env.mjs: the configuration schema, which scripts/serve.mjs checks before it starts anything;
// connections.mjs: the record of each HTTP connection it keeps for a clean stop; local-stripe.mjs:
// the local Stripe-compatible server `npm start` runs (scripts/start.mjs), without TypeScript.
const BUNDLES = { env: 'lib/env.ts', connections: 'lib/http/connections.ts', 'local-stripe': 'lib/processor/local-stripe/server.ts', worker: 'scripts/worker.ts', migrate: 'scripts/migrate.ts', 'company-create': 'scripts/company-create.ts', 'secrets-rotate': 'scripts/secrets-rotate.ts' };

fs.rmSync(path.join(root, 'dist'), { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: Object.fromEntries(Object.entries(BUNDLES).map(([name, file]) => [name, path.join(root, file)])),
  outdir: path.join(root, 'dist'),
  outExtension: { '.js': '.mjs' },
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  // The standalone build's node_modules holds these (Next.js keeps them external too).
  external: ['@electric-sql/pglite', 'postgres', 'pino', 'prom-client'],
  // Bundled CommonJS packages call require() for Node's own modules.
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  legalComments: 'none',
  logLevel: 'warning',
});
console.log(`bundled ${Object.keys(BUNDLES).map((n) => `dist/${n}.mjs`).join(', ')}`);
