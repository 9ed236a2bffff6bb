import type { TestProject } from 'vitest/node';
import { useSetup } from './database-setups';

// The `postgres` project and `postgres-isolated` (its files that keep a process each) share one
// cluster and template (TEST_PG_PORT): started with the run's other database setups, stopped
// after the last one's teardown.
export default async function setup(project: TestProject) {
  const { value: url, teardown } = await useSetup(project, 'postgres');
  project.provide('postgresUrl', url);
  project.provide('postgresAdminUrl', url);
  return teardown;
}
