import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import { count } from 'drizzle-orm';
import { getDatabase, type Db } from './db/client';
import { companies } from './db/schema';
import { appSecret, dataDir, publicUrl } from './config';
import { createCompany } from './billing/companies/companies';
import { testSettingsRefusedByStoredKeys } from './billing/companies/live-keys';
import { registerBillingTasks } from './billing/tasks';
import { startWorker, syncTestClock } from './jobs/worker';
import { migrationsApplied, untilMigrated } from './probes';
import { exitOnSignals, shutdown, shutdownStarted } from './shutdown';
import { log } from './log';
import { registry } from './metrics/registry';
import { ConfigError, loadEnv, setting, startedNodeEnv, testSettingsLifted } from './env';

type Launcher = { __billingHttpServers?: Set<Server>; __billingSignals?: boolean; __billingBooted?: boolean };

/**
 * Server start: open (and, unless MIGRATE=0, migrate) the database, take the shared test clock's
 * time, create the demo company on a fresh embedded database, and start the in-process worker.
 * Next.js serves no request before this resolves; when it throws, the process stops.
 */
export async function boot(): Promise<void> {
  try {
    await start();
  } finally {
    // scripts/serve.mjs answers the probes itself until now.
    (globalThis as Launcher).__billingBooted = true;
  }
}

async function start(): Promise<void> {
  let lifted: string | null;
  try {
    lifted = testSettingsLifted(loadEnv(), startedNodeEnv());
    appSecret();
  } catch (err) {
    // A server that cannot seal or sign anything, or would run on a setting it misread, must not
    // come up half-way.
    log.fatal((err as Error).message);
    process.exit(err instanceof ConfigError ? 2 : 1);
  }
  if (lifted) log.warn(lifted);
  // next-auth reads it from the environment itself.
  if (!setting('NEXTAUTH_URL')) process.env.NEXTAUTH_URL = publicUrl();
  // Process metrics count from the start, and a cluster primary can gather this process's.
  registry();
  const launcher = globalThis as Launcher;
  // scripts/serve.mjs turns off Next.js' own signal handling (which exits 143 as soon as the
  // HTTP server is closed) and hands us its HTTP servers: the stop sequence is ours.
  if (process.env.NEXT_MANUAL_SIG_HANDLE && !launcher.__billingSignals) {
    launcher.__billingSignals = true;
    exitOnSignals(() => ({ servers: launcher.__billingHttpServers ?? [] }));
  }
  registerBillingTasks();
  const database = await getDatabase();
  // The embedded database's thread cannot come back: stop, and exit 1 so the supervisor restarts us.
  void database.lost?.then((err) => {
    log.fatal({ err }, 'The embedded database stopped; stopping the process so that it is restarted.');
    void shutdown({ servers: launcher.__billingHttpServers ?? [], immediate: true }).then(() => process.exit(1));
  });
  // A stop that began while the database opened (a long migration) has stopped the worker already.
  if (shutdownStarted()) return;
  let ready = false;
  try {
    ready = await migrationsApplied();
    if (!ready) log.warn('Migrations are not applied (MIGRATE=0): readiness answers 503 until `npm run db:migrate` has run.');
  } catch (err) {
    log.warn({ err }, 'The database does not answer yet; readiness answers 503 until it does');
  }
  // What needs the schema: with MIGRATE=0 it may come after the start (`npm run db:migrate`).
  const migrated = async () => {
    // Test settings never run beside live keys: real payments (lib/env.ts).
    const refused = await testSettingsRefusedByStoredKeys(database.db);
    if (refused.length) {
      log.fatal(refused.join('\n'));
      await shutdown({ servers: launcher.__billingHttpServers ?? [], immediate: true });
      process.exit(2);
    }
    await syncTestClock(database.db);
    // Not in the image (DEMO_COMPANY=0 there): its credentials go to stdout, a production log.
    if (database.kind === 'embedded' && !setting('ADMIN_TOKEN') && setting('DEMO_COMPANY')) await seedDemo(database.db);
    if (setting('WORKER') && !shutdownStarted()) startWorker();
  };
  if (ready) return migrated();
  // Meanwhile requests are answered (readiness 503); no work starts, and nothing reads the schema, before it is there.
  void untilMigrated(setting('WORKER_INTERVAL_MS'))
    .then((applied) => (applied ? migrated() : undefined))
    .catch(async (err) => {
      log.fatal({ err }, 'Could not start once the migrations were applied; stopping the process so that it is restarted.');
      await shutdown({ servers: launcher.__billingHttpServers ?? [], immediate: true });
      process.exit(1);
    });
}

/**
 * The demo company of a fresh embedded database, its credentials saved in DATA_DIR/demo.json and,
 * for the person who ran `npm start`, printed. Not printed with NODE_ENV=production (as the user
 * set it: lib/env.ts, startedNodeEnv), where stdout is a log that others read and keep.
 */
export async function seedDemo(db: Db, print: (text: string) => void = console.log): Promise<void> {
  const [{ n }] = await db.select({ n: count() }).from(companies);
  if (n > 0) return;
  const password = randomBytes(9).toString('base64url');
  const stripeApi = setting('STRIPE_API_URL');
  const localStripe = Boolean(stripeApi && /127\.0\.0\.1|localhost/.test(stripeApi));
  const { company, apiKey } = await createCompany({
    db,
    input: {
      name: 'Demo Company',
      email: 'admin@demo.local',
      password,
      ...(localStripe && { processor_key: 'sk_test_demo', processor_publishable_key: 'pk_test_demo' }),
    },
  });
  const base = publicUrl();
  const file = path.join(dataDir(), 'demo.json');
  fs.writeFileSync(
    file,
    JSON.stringify({ company_id: company.id, api_key: apiKey, console_email: 'admin@demo.local', console_password: password }, null, 2),
    { mode: 0o600 },
  );
  if (startedNodeEnv() === 'production') {
    print(`\nDemo company created. Its API key and console password are not printed, because NODE_ENV is production: they are in ${file} (readable by this user only).\n`);
    return;
  }
  const lines = [
    '',
    'Demo company created (shown once; also saved in ' + file + '):',
    `  company id:  ${company.id}`,
    `  API key:     ${apiKey}`,
    `  console:     ${base}/console   email admin@demo.local   password ${password}`,
    `  try:         curl -u ${company.id}:${apiKey} ${base}/v1/companies`,
    '',
  ];
  // For the person who ran `npm start`: plain text, not a log line.
  print(lines.join('\n'));
}
