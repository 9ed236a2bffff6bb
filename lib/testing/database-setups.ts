import type { TestProject } from 'vitest/node';
// @ts-expect-error plain ESM helper shared with the benchmarks
import { inOwnProcess, stopPgBouncer, stopPostgres } from '../../scripts/pg.mjs';
import { embeddedTemplate, makePostgresTemplate } from './templates';

/**
 * What the database projects need before their first file: the embedded template, the PostgreSQL
 * cluster with its template (`postgres`, `postgres-isolated`), and the pooled project's own
 * cluster behind PgBouncer (`pgbouncer`, beside the other, which may run at the same time).
 * Vitest runs the projects' global setups one after another and no file starts before the last:
 * the first of them starts every one the run's projects need, side by side (PGlite's migrations
 * on its thread, initdb and pg_ctl in processes of their own), and each project's setup waits for
 * its own. Kept on globalThis: each project loads its setup module on its own.
 */
const pgPort = Number(process.env.TEST_PG_PORT ?? 24329);
/** TEST_PGBOUNCER_PORT, PostgreSQL on the port after it. */
const bouncerPort = Number(process.env.TEST_PGBOUNCER_PORT ?? pgPort + 1000);
const pooledName = 'billing-pooled';

type Piece<T> = { value: Promise<T>; users: number; stop: () => void };
type Setups = { embedded?: Piece<string>; postgres?: Piece<string>; pooled?: Piece<{ url: string; direct: string }> };
const state = globalThis as { __testDatabaseSetups?: Setups };

function piece<T>(start: () => Promise<T>, stop: () => void): Piece<T> {
  const value = start();
  // Awaited by its project's setup, which reports a failure; until then not an unhandled one.
  value.catch(() => {});
  return { value, users: 0, stop };
}

function setups(project: TestProject): Setups {
  if (state.__testDatabaseSetups) return state.__testDatabaseSetups;
  const names = new Set(project.vitest.projects.map((p) => p.name));
  const wanted = (...of: string[]) => of.some((n) => names.has(n)) || of.includes(project.name);
  const started: Setups = {};
  if (wanted('embedded', 'embedded-isolated')) started.embedded = piece(embeddedTemplate, () => {});
  if (wanted('postgres', 'postgres-isolated')) {
    started.postgres = piece(
      async () => {
        const url: string = await inOwnProcess('startPostgres', { port: pgPort });
        await makePostgresTemplate(url);
        return url;
      },
      () => stopPostgres({ port: pgPort }),
    );
  }
  if (wanted('pgbouncer')) {
    started.pooled = piece(
      async () => {
        const direct: string = await inOwnProcess('startPostgres', { port: bouncerPort + 1, name: pooledName });
        await makePostgresTemplate(direct);
        const url: string = await inOwnProcess('startPgBouncer', { port: bouncerPort, pgPort: bouncerPort + 1, name: pooledName });
        return { url, direct };
      },
      () => {
        stopPgBouncer({ port: bouncerPort, name: pooledName });
        stopPostgres({ port: bouncerPort + 1, name: pooledName });
      },
    );
  }
  // A cluster started for a project that then had no file to run (a run of some files only) has
  // no teardown: stopped as the run's process ends.
  process.once('exit', () => {
    for (const p of Object.values(started)) if (p && p.users === 0) p.stop();
  });
  state.__testDatabaseSetups = started;
  return started;
}

/**
 * The setup of `project` for the piece it uses: waits for it (started with the others), and
 * answers it with the teardown that stops it after its last user's.
 */
export async function useSetup<K extends keyof Setups>(project: TestProject, kind: K): Promise<{ value: Awaited<NonNullable<Setups[K]>['value']>; teardown: () => void }> {
  const p = setups(project)[kind] as Piece<Awaited<NonNullable<Setups[K]>['value']>> | undefined;
  if (!p) throw new Error(`lib/testing/database-setups.ts: project ${project.name} asked for ${kind}, not started for this run`);
  p.users++;
  const value = await p.value;
  return {
    value,
    teardown: () => {
      if (--p.users === 0) p.stop();
    },
  };
}
