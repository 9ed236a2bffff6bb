// `npm start`: build when the sources changed, start the bundled local Stripe-compatible server
// (unless STRIPE_API_URL points elsewhere, or this is production), then serve the API, console
// and collector on PORT.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { tsImport } from 'tsx/esm/api';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
process.chdir(root);
const nextBin = path.join(root, 'node_modules/next/dist/bin/next');

// The configuration is checked before anything is built or started (lib/env.ts): a wrong value
// stops here, naming the variable.
const { loadEnv } = await tsImport('../lib/env.ts', import.meta.url);
let config;
try {
  config = loadEnv();
} catch (err) {
  if (err?.name !== 'ConfigError') throw err;
  console.error(`npm start: ${err.message}`);
  process.exit(2);
}
const port = String(config.PORT);

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

function needsBuild() {
  const stamp = path.join(root, '.next/BUILD_ID');
  if (!fs.existsSync(stamp)) return true;
  const built = fs.statSync(stamp).mtimeMs;
  return newestMtime(['app', 'components', 'lib', 'drizzle', 'instrumentation.ts', 'next.config.mjs', 'package.json', 'postcss.config.mjs']) > built;
}

if (needsBuild()) {
  console.log('Building the application (first start or changed sources)…');
  const r = spawnSync(process.execPath, [nextBin, 'build'], { stdio: 'inherit', env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1' } });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port: p } = srv.address();
      srv.close(() => resolve(p));
    });
  });
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

const children = [];
const env = { ...process.env, NEXT_TELEMETRY_DISABLED: '1' };
const refusal = config.STRIPE_API_URL ? null : refuseBundledStripe(env);
if (refusal) {
  console.log(
    `npm start: not starting the bundled local Stripe server, because ${refusal}. Payments go to Stripe's own API ` +
      "with each company's own keys. To try the service locally with test keys instead, start it without NODE_ENV=production " +
      'and without live keys in the environment; to use another Stripe-compatible server, set STRIPE_API_URL.',
  );
} else if (!config.STRIPE_API_URL) {
  const stripePort = String(config.LOCAL_STRIPE_PORT || (await freePort()));
  const stripe = spawn(process.execPath, ['--import', 'tsx', 'scripts/local-stripe.ts'], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...env, PORT: stripePort },
  });
  children.push(stripe);
  env.STRIPE_API_URL = `http://127.0.0.1:${stripePort}`;
  // Wait until it accepts connections.
  for (let i = 0; i < 100; i++) {
    const up = await new Promise((res) => {
      const s = net.connect(Number(stripePort), '127.0.0.1', () => { s.end(); res(true); });
      s.on('error', () => res(false));
    });
    if (up) break;
    await new Promise((r) => setTimeout(r, 100));
  }
}

const server = spawn(process.execPath, ['scripts/serve.mjs'], { stdio: 'inherit', env: { ...env, PORT: port } });
children.push(server);
const stop = (signal) => children.forEach((c) => c.exitCode === null && c.kill(signal));
process.on('SIGINT', () => stop('SIGINT'));
process.on('SIGTERM', () => stop('SIGTERM'));
server.on('exit', (code, signal) => {
  stop('SIGTERM');
  // Killed by a signal (out of memory, SIGKILL): a failure, as a shell would report it.
  process.exit(code ?? 128 + (os.constants.signals[signal] ?? 0));
});
