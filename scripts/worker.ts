// `npm run worker`: time-driven work in its own process, next to any number of app processes
// and other workers on one PostgreSQL (claims use FOR UPDATE SKIP LOCKED).
import { getDatabase } from '../lib/db/client';
import { startWorker, stopWorker } from '../lib/jobs/worker';
import { appSecret } from '../lib/config';

if (!process.env.DATABASE_URL) {
  console.error('npm run worker needs DATABASE_URL: with the embedded database the server runs the work itself.');
  process.exit(2);
}
try {
  appSecret();
} catch (err) {
  console.error(`worker: ${(err as Error).message}`);
  process.exit(1);
}
const database = await getDatabase();
startWorker();
console.log(`worker running (pid ${process.pid})`);
const keepAlive = setInterval(() => {}, 1 << 30);
const stop = async () => {
  await stopWorker();
  clearInterval(keepAlive);
  await database.close();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
