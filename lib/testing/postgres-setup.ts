import type { TestProject } from 'vitest/node';
// @ts-expect-error plain ESM helper shared with the benchmarks
import { startPostgres, stopPostgres } from '../../scripts/pg.mjs';
import { makePostgresTemplate } from './templates';

const port = Number(process.env.TEST_PG_PORT ?? 24329);

// The `postgres` project and `postgres-isolated` (its files that keep a process each) share one
// cluster and template: started by the first of them to set up, stopped after the last one's
// teardown. Kept on globalThis: each project loads this module on its own.
type Cluster = { users: number; url: Promise<string> };
const clusters: Map<number, Cluster> = ((globalThis as { __testPostgresClusters?: Map<number, Cluster> }).__testPostgresClusters ??= new Map());

export default async function setup(project: TestProject) {
  let cluster = clusters.get(port);
  if (!cluster) {
    const url = (async () => {
      const started: string = startPostgres({ port });
      await makePostgresTemplate(started);
      return started;
    })();
    cluster = { users: 0, url };
    clusters.set(port, cluster);
  }
  cluster.users++;
  const shared = cluster;
  const url = await shared.url;
  project.provide('postgresUrl', url);
  project.provide('postgresAdminUrl', url);
  return () => {
    if (--shared.users > 0) return;
    clusters.delete(port);
    stopPostgres({ port });
  };
}
