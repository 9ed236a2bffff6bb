// `npm run worker` (or `node dist/worker.mjs` in the image): time-driven work in its own process,
// next to any number of app processes and other workers on one PostgreSQL (claims use FOR UPDATE
// SKIP LOCKED). WORKER_HEALTH_PORT serves /livez, /readyz and /metrics for an orchestrator and
// Prometheus. SIGTERM stops claiming, gives back what was claimed and not started, finishes the
// webhook sends under way, closes the database and exits 0 (lib/shutdown.ts). Logs are JSON lines.
import type { Server } from 'node:http';
import { getDatabase, type Db } from '../lib/db/client';
import { startWorker } from '../lib/jobs/worker';
import { registerBillingTasks } from '../lib/billing/tasks';
import { testSettingsRefusedByStoredKeys } from '../lib/billing/companies/live-keys';
import { appSecret } from '../lib/config';
import { startProbeServer, untilMigrated } from '../lib/probes';
import { exitOnSignals, shutdownStarted } from '../lib/shutdown';
import { log } from '../lib/log';
import { registry } from '../lib/metrics/registry';
import { loadEnv, startedNodeEnv, testSettingsLifted, type Env } from '../lib/env';

let env: Env;
try {
  env = loadEnv();
  appSecret();
} catch (err) {
  log.fatal(err instanceof Error ? err.message : String(err));
  process.exit(2);
}
const lifted = testSettingsLifted(env, startedNodeEnv());
if (lifted) log.warn(lifted);
if (!env.DATABASE_URL) {
  log.fatal('npm run worker needs DATABASE_URL: with the embedded database the server runs the work itself.');
  process.exit(2);
}
const healthPort = env.WORKER_HEALTH_PORT;
const probes: Server[] = [];
exitOnSignals(() => ({ keepOpen: probes }));
registry();
// Probes first: /livez answers while the database opens and migrates, /readyz 503 until it is done.
if (healthPort !== undefined) {
  const server = await startProbeServer(healthPort);
  probes.push(server);
  const address = server.address();
  log.info(`worker probes on port ${typeof address === 'object' && address ? address.port : healthPort} (/livez, /readyz, /metrics)`);
}
let db: Db;
try {
  ({ db } = await getDatabase());
} catch (err) {
  log.fatal({ err }, 'Could not open and migrate the database');
  process.exit(1);
}
// With MIGRATE=0 the schema comes with `npm run db:migrate`, maybe after this process started:
// nothing is read or run before it is there.
const migrated = await untilMigrated(env.WORKER_INTERVAL_MS, () =>
  log.warn('Migrations are not applied (MIGRATE=0): the worker waits for `npm run db:migrate`, and readiness answers 503 until it has run.'),
);
// Test settings never run beside live keys: real payments (lib/env.ts).
let refused: string[] = [];
try {
  if (migrated) refused = await testSettingsRefusedByStoredKeys(db);
} catch (err) {
  log.fatal({ err }, 'Could not read whether a company has a live key stored');
  process.exit(1);
}
if (refused.length) {
  log.fatal(refused.join('\n'));
  process.exit(2);
}
registerBillingTasks();
// A stop that began while the database opened or migrated (a long migration) ends the process: nothing to start.
if (migrated && !shutdownStarted()) {
  startWorker();
  log.info(`worker running (pid ${process.pid})`);
}
// The worker's own timers do not keep the process alive.
setInterval(() => {}, 1 << 30);
