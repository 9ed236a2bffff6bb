import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const root = fileURLToPath(new URL('.', import.meta.url)).replace(/\/$/, '');

/** Every test file of the vitest projects (faults/ has a configuration of its own). */
function testFiles(): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const entry of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const child = path.posix.join(rel, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules' && entry.name !== 'dist') walk(child);
      } else if (entry.name.endsWith('.test.ts')) out.push(child);
    }
  };
  for (const dir of ['lib', 'app', 'scripts', 'sdk', 'local-stripe']) walk(dir);
  return out.sort();
}

/**
 * A file that uses the project's database (`useTestDatabase()`; a database on its cluster,
 * `emptyPostgresDatabase()` or `migratedPostgresDatabase()`; or asks which one it is, TEST_DB)
 * runs once on each database, `embedded` and `postgres`. Every other file needs neither and runs
 * once, in `unit`.
 */
const OPENS_DATABASE = /\b(useTestDatabase|emptyPostgresDatabase|migratedPostgresDatabase)\(|process\.env\.TEST_DB\b/;
const files = testFiles();
const onDatabases = files.filter((f) => OPENS_DATABASE.test(fs.readFileSync(path.join(root, f), 'utf8')));
const unit = files.filter((f) => !onDatabases.includes(f));

/**
 * The unit files run one after another in a worker that stays (`isolate: false`): no new process,
 * setup file and module imports for each (bench/README.md, "One worker for the unit files"). Such
 * a file leaves the process as it found it: settings through `withSettings`, not `process.env`;
 * servers, timers and loggers it starts closed again. These cannot, and keep a process each
 * (`unit-isolated`): they replace modules with `vi.mock` (replaced for every file after them
 * too), or stop the process (`shutdown()`, `closeDatabase()`: the stopping state is
 * process-wide, and the process's database is not opened again).
 */
const OWN_PROCESS = ['lib/crypto.test.ts', 'lib/shutdown-bound.test.ts', 'lib/shutdown.test.ts', 'lib/shutdown-delay.test.ts', 'lib/db/closed.test.ts'];
const STOPS_OR_MOCKS = /\bvi\.(do)?[mM]ock\(|(?<![.\w])(shutdown|closeDatabase)\(/;
for (const f of OWN_PROCESS) if (!unit.includes(f)) throw new Error(`vitest.config.ts: ${f} is listed for unit-isolated but is not a unit file`);
for (const f of unit) if (!OWN_PROCESS.includes(f) && STOPS_OR_MOCKS.test(fs.readFileSync(path.join(root, f), 'utf8'))) throw new Error(`vitest.config.ts: ${f} mocks a module or stops the process; list it in OWN_PROCESS`);

/**
 * The files whose SQL a transaction-mode pooler can change, run a third time through PgBouncer
 * with statements unprepared (bench/README.md, "Through a pooler"). A pooler hands each
 * transaction any server connection: what it can break is what lives in a session (named
 * prepared statements, locks and settings held across transactions). Row locks, SKIP LOCKED
 * claims and transactions are the same either way. So: the statements the code prepares by
 * name itself (the single-event statement, lib/billing/events/single.ts), the batch path's
 * transaction-scoped advisory lock and `set_config` (events.ts) and the webhooks' (webhooks.ts),
 * concurrent writers on one balance (group commit, two app processes), the reference model of
 * balances (every write path, the single-event statement among them), spend limits (their
 * counters read and moved under the balance lock), the check's one statement (prepared where
 * the pool allows), migrations under their advisory lock, and every endpoint once.
 */
const POOLED = [
  'lib/billing/events/events.test.ts',
  'lib/billing/events/single.test.ts',
  'lib/billing/events/group.test.ts',
  'lib/billing/events/concurrency.test.ts',
  'lib/billing/events/ledger-order.test.ts',
  'lib/billing/events/paths.property.test.ts',
  'lib/billing/events/gone-balance.test.ts',
  'lib/billing/events/check.test.ts',
  'lib/billing/balances/model.property.test.ts',
  'lib/billing/balances/spend-limits.test.ts',
  'lib/billing/webhooks/webhooks.test.ts',
  'lib/db/migrate.test.ts',
  'lib/api/every-endpoint.test.ts',
];
for (const f of POOLED) if (!onDatabases.includes(f)) throw new Error(`vitest.config.ts: ${f} is listed for the pgbouncer project but does not open a test database`);

/**
 * The database projects' files also run one after another in workers that stay (`isolate: false`;
 * bench/README.md, "Database files in workers that stay"): no new process, setup files, imports
 * and PGlite's WebAssembly for each. Their files set the process's database, tasks, settings
 * (`process.env`), clock, processor and caches: after each file, lib/testing/between-files.ts
 * puts back every piece lib/testing/process-state.ts lists, and fails a file that leaves the
 * worker loop, sends, hashes, requests or handles (a database, a server, a timer) behind. These
 * cannot share, and keep a process each (`embedded-isolated`, `postgres-isolated`): they replace
 * modules with `vi.mock` (a module another file loaded first would stay unreplaced, and the
 * replacement would stay for the files after), or stop the process. A database file outside this
 * list that calls `vi.mock`, `shutdown()` or `closeDatabase()` is refused below.
 */
const DB_OWN_PROCESS = [
  'app/console/(app)/webhooks/actions.test.ts',
  'lib/console/actions-isolation.test.ts',
  'lib/console/exports.test.ts',
  'lib/console/form-input.test.ts',
  'lib/console/plan-rate-card.test.ts',
];
for (const f of DB_OWN_PROCESS) if (!onDatabases.includes(f)) throw new Error(`vitest.config.ts: ${f} is listed in DB_OWN_PROCESS but does not open a test database`);
for (const f of DB_OWN_PROCESS) if (POOLED.includes(f)) throw new Error(`vitest.config.ts: ${f} is pooled and needs a process of its own: the pgbouncer project shares its workers`);
for (const f of onDatabases) if (!DB_OWN_PROCESS.includes(f) && STOPS_OR_MOCKS.test(fs.readFileSync(path.join(root, f), 'utf8'))) throw new Error(`vitest.config.ts: ${f} mocks a module or stops the process; list it in DB_OWN_PROCESS`);
const sharing = onDatabases.filter((f) => !DB_OWN_PROCESS.includes(f));

/**
 * The database projects' files hash passwords at a lower cost (lib/testing/password-cost.ts);
 * the unit project keeps the real one, which lib/crypto.test.ts checks. Where files share a
 * worker, between-files.ts comes last: its `afterAll` then runs after every other.
 */
const onDatabaseSetup = ['lib/testing/log-setup.ts', 'lib/testing/password-cost.ts'];
const sharedDatabaseSetup = [...onDatabaseSetup, 'lib/testing/between-files.ts'];

const env = { APP_SECRET: 'test-secret-of-at-least-32-bytes-0123456789', WEBHOOK_ALLOW_PRIVATE: '1' };

/**
 * The order the projects' files are handed to the two workers. Vitest's own order is by project
 * name, which put the five `unit-isolated` files (a process each, the slowest of them 10 s) last:
 * one worker then waited for the other. Here the files that take a process each come first, the
 * shared-worker projects after them with the largest (embedded) first, and the unit project last:
 * within a project the order stays vitest's (longest first by the last run's times, else largest
 * file first), so a run ends on its smallest files, on both workers at once.
 */
const PROJECT_ORDER = ['embedded-isolated', 'postgres-isolated', 'unit-isolated', 'embedded', 'postgres', 'pgbouncer', 'unit'];

class ProjectOrderSequencer extends BaseSequencer {
  async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const at = PROJECT_ORDER.indexOf(spec.project.name);
      return at === -1 ? PROJECT_ORDER.length : at;
    };
    return sorted.map((spec, at) => ({ spec, at })).sort((a, b) => rank(a.spec) - rank(b.spec) || a.at - b.at).map(({ spec }) => spec);
  }
}

const projects: (TestProjectInlineConfiguration & { test: { name: string } })[] = [
  { extends: true, test: { name: 'unit', include: unit.filter((f) => !OWN_PROCESS.includes(f)), isolate: false, env: env } },
  { extends: true, test: { name: 'unit-isolated', include: OWN_PROCESS, env: env } },
  { extends: true, test: { name: 'embedded', include: sharing, isolate: false, setupFiles: sharedDatabaseSetup, env: { ...env, TEST_DB: 'embedded' }, globalSetup: ['lib/testing/embedded-setup.ts'] } },
  { extends: true, test: { name: 'embedded-isolated', include: DB_OWN_PROCESS, setupFiles: onDatabaseSetup, env: { ...env, TEST_DB: 'embedded' }, globalSetup: ['lib/testing/embedded-setup.ts'] } },
  { extends: true, test: { name: 'postgres', include: sharing, isolate: false, setupFiles: sharedDatabaseSetup, env: { ...env, TEST_DB: 'postgres' }, globalSetup: ['lib/testing/postgres-setup.ts'] } },
  { extends: true, test: { name: 'postgres-isolated', include: DB_OWN_PROCESS, setupFiles: onDatabaseSetup, env: { ...env, TEST_DB: 'postgres' }, globalSetup: ['lib/testing/postgres-setup.ts'] } },
  {
    extends: true,
    test: {
      name: 'pgbouncer',
      include: POOLED,
      isolate: false,
      setupFiles: sharedDatabaseSetup,
      env: { ...env, TEST_DB: 'postgres', DATABASE_PREPARE: '0' },
      globalSetup: ['lib/testing/pgbouncer-setup.ts'],
    },
  },
];
const names = projects.map((p) => p.test.name).sort();
if (names.join() !== [...PROJECT_ORDER].sort().join()) throw new Error(`vitest.config.ts: ProjectOrderSequencer orders the projects ${PROJECT_ORDER.join(', ')}, not ${names.join(', ')}`);

export default defineConfig({
  resolve: { alias: { '@': root } },
  test: {
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    sequence: { sequencer: ProjectOrderSequencer },
    setupFiles: ['lib/testing/log-setup.ts'],
    projects,
  },
});
