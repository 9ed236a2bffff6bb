// `npm run worker` (or `node dist/worker.mjs` in the image): time-driven work in its own process,
// next to any number of app processes and other workers on one PostgreSQL (claims use FOR UPDATE
// SKIP LOCKED). WORKER_HEALTH_PORT serves /livez, /readyz and /metrics for an orchestrator and
// Prometheus. SIGTERM stops claiming, gives back what was claimed and not started, finishes the
// webhook sends under way, closes the database and exits 0 (lib/shutdown.ts). Logs are JSON lines.
import type { Server } from 'node:http';
import { getDatabase } from '../lib/db/client';
import { startWorker } from '../lib/jobs/worker';
import { appSecret } from '../lib/config';
import { startProbeServer } from '../lib/probes';
import { exitOnSignals, shutdownTimeoutMs } from '../lib/shutdown';
import { log, logLevel } from '../lib/log';
import { metricsToken, registry } from '../lib/metrics/registry';

if (!process.env.DATABASE_URL) {
  log.fatal('npm run worker needs DATABASE_URL: with the embedded database the server runs the work itself.');
  process.exit(2);
}
const rawPort = process.env.WORKER_HEALTH_PORT?.trim();
if (rawPort && !(/^\d+$/.test(rawPort) && Number(rawPort) < 65536)) {
  log.fatal(`WORKER_HEALTH_PORT must be a TCP port number (0 to 65535); got "${rawPort}".`);
  process.exit(2);
}
try {
  appSecret();
  shutdownTimeoutMs();
  logLevel();
  metricsToken();
} catch (err) {
  log.fatal(err instanceof Error ? err.message : String(err));
  process.exit(2);
}
const probes: Server[] = [];
exitOnSignals(() => ({ keepOpen: probes }));
try {
  await getDatabase();
} catch (err) {
  log.fatal({ err }, 'Could not open and migrate the database');
  process.exit(1);
}
registry();
startWorker();
if (rawPort) {
  const server = await startProbeServer(Number(rawPort));
  probes.push(server);
  const address = server.address();
  log.info(`worker probes on port ${typeof address === 'object' && address ? address.port : rawPort} (/livez, /readyz, /metrics)`);
}
log.info(`worker running (pid ${process.pid})`);
// The worker's own timers do not keep the process alive.
setInterval(() => {}, 1 << 30);
