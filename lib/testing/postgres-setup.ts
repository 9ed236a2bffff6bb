import type { TestProject } from 'vitest/node';
// @ts-expect-error plain ESM helper shared with the benchmarks
import { startPostgres, stopPostgres } from '../../scripts/pg.mjs';

declare module 'vitest' {
  export interface ProvidedContext {
    postgresUrl: string;
  }
}

const port = Number(process.env.TEST_PG_PORT ?? 24329);

export default function setup(project: TestProject) {
  const url: string = startPostgres({ port });
  project.provide('postgresUrl', url);
  return () => stopPostgres({ port });
}
