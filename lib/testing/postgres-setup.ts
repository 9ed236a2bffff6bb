import type { TestProject } from 'vitest/node';
// @ts-expect-error plain ESM helper shared with the benchmarks
import { startPostgres, stopPostgres } from '../../scripts/pg.mjs';
import { makePostgresTemplate } from './templates';

const port = Number(process.env.TEST_PG_PORT ?? 24329);

export default async function setup(project: TestProject) {
  const url: string = startPostgres({ port });
  await makePostgresTemplate(url);
  project.provide('postgresUrl', url);
  project.provide('postgresAdminUrl', url);
  return () => stopPostgres({ port });
}
