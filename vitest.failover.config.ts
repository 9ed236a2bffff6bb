import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// `npm run test:failover`: the service on a Patroni cluster (a primary and a synchronous standby,
// scripts/ha-cluster.mjs) while the primary's PostgreSQL is killed, once on each node
// (faults/failover.test.ts). Apart from the fault scenarios, which share one plain cluster.
export default defineConfig({
  resolve: { alias: { '@': fileURLToPath(new URL('.', import.meta.url)).replace(/\/$/, '') } },
  test: {
    name: 'failover',
    include: ['faults/failover.test.ts'],
    testTimeout: 600_000,
    hookTimeout: 180_000,
    pool: 'forks',
    maxWorkers: 1,
  },
});
