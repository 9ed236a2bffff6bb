// `npm start`: build when the sources changed, start the bundled local Stripe-compatible server
// (unless STRIPE_API_URL points elsewhere, or this is production), then become the server that
// serves the API, console and collector on PORT (scripts/serve.mjs, in this very process).
//
// This process hands over instead of staying beside the server: what `npm start` leaves running
// is npm and one Node.js process (bench/README.md, "What `npm start` keeps running"). So nothing
// heavy is loaded here before the hand-over: the configuration is checked with the build's
// bundle of its schema (or, while that is stale, in a short-lived process of its own), and the
// local Stripe server is the build's bundle too, started in this process before the server.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
process.chdir(root);
const nextBin = path.join(root, 'node_modules/next/dist/bin/next');
const SOURCES = ['app', 'components', 'lib', 'drizzle', 'instrumentation.ts', 'next.config.mjs', 'package.json', 'postcss.config.mjs'];

function newestMtime(entries) {
  let newest = 0;
  const walk = (p) => {
    let st;
    try { st = fs.statSync(p); } catch { return; }
    if (st.isDirectory()) {
      if (/node_modules|\.next|\.data|test-results/.test(path.basename(p))) return;
      for (const e of fs.readdirSync(p)) walk(path.join(p, e));
    } else if (!/\.test\.tsx?$/.test(p)) newest = Math.max(newest, st.mtimeMs);
  };
  entries.forEach((e) => walk(path.join(root, e)));
  return newest;
}

const builtAt = (file) => (fs.existsSync(file) ? fs.statSync(file).mtimeMs : 0);
const newest = newestMtime(SOURCES);
const bundle = (name) => path.join(root, 'dist', `${name}.mjs`);

// The configuration is checked before anything is built or started (lib/env.ts): a wrong value
// stops here, naming the variable.
let config;
if (builtAt(bundle('env')) >= newest) {
  const { loadEnv } = await import(pathToFileURL(bundle('env')).href);
  try {
    config = loadEnv();
  } catch (err) {
    if (err?.name !== 'ConfigError') throw err;
    console.error(`npm start: ${err.message}`);
    process.exit(2);
  }
} else {
  // From the sources, in a process of its own: the TypeScript loader stays out of this one.
  const check = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', `
    import { loadEnv } from './lib/env.ts';
    try { process.stdout.write(JSON.stringify(loadEnv())); }
    catch (err) { if (err?.name !== 'ConfigError') throw err; console.error('npm start: ' + err.message); process.exit(2); }`], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (check.status !== 0) process.exit(check.status ?? 1);
  config = JSON.parse(check.stdout);
}

if (builtAt(path.join(root, '.next/BUILD_ID')) < newest) {
  console.log('Building the application (first start or changed sources)…');
  const r = spawnSync(process.execPath, [nextBin, 'build'], { stdio: 'inherit', env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1' } });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
if (['env', 'connections', 'local-stripe'].some((name) => builtAt(bundle(name)) < newest)) {
  const r = spawnSync(process.execPath, ['scripts/bundle.mjs'], { stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

/**
 * Why the bundled stand-in must not run, or null. In production, or with a live key in the
 * environment, payments are real: they go to Stripe's own API, never to a local imitation that
 * would take card data and report payments no one made.
 */
function refuseBundledStripe(environment) {
  if (config.NODE_ENV === 'production') return 'NODE_ENV is production';
  const live = Object.entries(environment).find(([, value]) => /^(sk|rk|pk)_live_/.test(value ?? ''));
  return live ? `${live[0]} holds a live Stripe key` : null;
}

process.env.NEXT_TELEMETRY_DISABLED = '1';
process.env.PORT = String(config.PORT);
const refusal = config.STRIPE_API_URL ? null : refuseBundledStripe(process.env);
if (refusal) {
  console.log(
    `npm start: not starting the bundled local Stripe server, because ${refusal}. Payments go to Stripe's own API ` +
      "with each company's own keys. To try the service locally with test keys instead, start it without NODE_ENV=production " +
      'and without live keys in the environment; to use another Stripe-compatible server, set STRIPE_API_URL.',
  );
} else if (!config.STRIPE_API_URL) {
  // Before the server's own start: scripts/serve.mjs takes every HTTP server made after it for one of its own.
  const { startLocalStripe } = await import(pathToFileURL(bundle('local-stripe')).href);
  const stripe = await startLocalStripe({ port: config.LOCAL_STRIPE_PORT || 0, host: '127.0.0.1' });
  console.log(`local stripe listening on ${stripe.url}`);
  process.env.STRIPE_API_URL = stripe.url;
}

// The hand-over: this process is the server from here on; its signals and exit code are the server's.
await import(pathToFileURL(path.join(root, 'scripts/serve.mjs')).href);
