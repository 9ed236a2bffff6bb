import type { TestProject } from 'vitest/node';
// @ts-expect-error plain ESM helper shared with the benchmarks
import { startPgBouncer, startPostgres, stopPgBouncer, stopPostgres } from '../../scripts/pg.mjs';
import { makePostgresTemplate } from './templates';

// The pooled project's own cluster (beside the postgres project's, which may run at the same
// time) and PgBouncer in front of it: TEST_PGBOUNCER_PORT, PostgreSQL on the port after it.
const port = Number(process.env.TEST_PGBOUNCER_PORT ?? Number(process.env.TEST_PG_PORT ?? 24329) + 1000);
const name = 'billing-pooled';

export default async function setup(project: TestProject) {
  const direct: string = startPostgres({ port: port + 1, name });
  await makePostgresTemplate(direct);
  const url: string = startPgBouncer({ port, pgPort: port + 1, name });
  project.provide('postgresUrl', url);
  project.provide('postgresAdminUrl', direct);
  return () => {
    stopPgBouncer({ port, name });
    stopPostgres({ port: port + 1, name });
  };
}
