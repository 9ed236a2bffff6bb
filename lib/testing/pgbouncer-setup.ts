import type { TestProject } from 'vitest/node';
import { useSetup } from './database-setups';

// The pooled project's own cluster and PgBouncer in front of it (lib/testing/database-setups.ts):
// its files connect through PgBouncer, and create and clone databases on the cluster directly.
export default async function setup(project: TestProject) {
  const { value, teardown } = await useSetup(project, 'pooled');
  project.provide('postgresUrl', value.url);
  project.provide('postgresAdminUrl', value.direct);
  return teardown;
}
