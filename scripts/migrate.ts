// `npm run db:migrate` (or `node dist/migrate.mjs` in the image): applies the committed
// migrations (drizzle/) and exits, as a deploy step before app and worker processes start with
// MIGRATE=0. On PostgreSQL it takes an advisory lock in the transaction that applies them (so a
// transaction-mode pooler is fine); several runs at once apply everything exactly once.
import { committedMigrations, openEmbedded, openPostgres, pendingMigrations, type Database } from '../lib/db/client';
import { logForCommandLine } from '../lib/log';
import { loadEnv, type Env } from '../lib/env';

logForCommandLine();

let env: Env;
try {
  env = loadEnv(process.env, { needsAppSecret: false });
} catch (err) {
  console.error(`db:migrate: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(2);
}
const url = env.DATABASE_URL;
let database: Database;
try {
  database = url ? await openPostgres(url, { max: 2, migrate: false }) : await openEmbedded(env.DATA_DIR, { migrate: false });
} catch (err) {
  console.error(`db:migrate: could not open the database: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
try {
  const pending = await pendingMigrations(database.db);
  await database.migrate();
  const left = await pendingMigrations(database.db);
  if (left.length) throw new Error(`${left.length} migration(s) still not applied (first: ${left[0].tag})`);
  const latest = committedMigrations().at(-1)?.tag ?? 'none';
  const where = url ? 'PostgreSQL' : `the embedded database in ${env.DATA_DIR}`;
  console.log(pending.length ? `db:migrate: applied ${pending.length} migration(s) to ${where}; latest is ${latest}` : `db:migrate: ${where} is up to date (latest is ${latest})`);
  await database.close();
} catch (err) {
  console.error(`db:migrate: ${err instanceof Error ? err.message : String(err)}`);
  await database.close().catch(() => {});
  process.exit(1);
}
