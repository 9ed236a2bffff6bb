import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// `npm run test:faults`: the fault scenarios (faults/), apart from the unit and integration
// projects of vitest.config.ts. One file, its scenarios in order: they start processes of their
// own and share one PostgreSQL cluster (FAULTS_PG_PORT, default 24350).
export default defineConfig({
  resolve: { alias: { '@': fileURLToPath(new URL('.', import.meta.url)).replace(/\/$/, '') } },
  test: {
    name: 'faults',
    include: ['faults/**/*.test.ts'],
    // The failover scenario has a cluster of its own: `npm run test:failover` (vitest.failover.config.ts).
    exclude: ['faults/failover.test.ts'],
    testTimeout: 300_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 1,
  },
});
