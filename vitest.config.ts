import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const include = ['lib/**/*.test.ts', 'app/**/*.test.ts', 'scripts/**/*.test.ts', 'sdk/**/*.test.ts'];

export default defineConfig({
  resolve: { alias: { '@': fileURLToPath(new URL('.', import.meta.url)).replace(/\/$/, '') } },
  test: {
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    setupFiles: ['lib/testing/log-setup.ts'],
    projects: [
      { extends: true, test: { name: 'embedded', include, env: { TEST_DB: 'embedded', APP_SECRET: 'test-secret-of-at-least-32-bytes-0123456789', WEBHOOK_ALLOW_PRIVATE: '1' } } },
      {
        extends: true,
        test: {
          name: 'postgres',
          include,
          env: { TEST_DB: 'postgres', APP_SECRET: 'test-secret-of-at-least-32-bytes-0123456789', WEBHOOK_ALLOW_PRIVATE: '1' },
          globalSetup: ['lib/testing/postgres-setup.ts'],
        },
      },
      {
        // The domain and the API again, through PgBouncer in transaction mode with statements
        // unprepared: what a deployment behind a pooler runs (bench/README.md, "Through a pooler").
        extends: true,
        test: {
          name: 'pgbouncer',
          // The API's fuzz test (5,000 requests, the longest file) stays on the direct projects.
          include: ['lib/billing/**/*.test.ts', 'lib/api/**/*.test.ts'],
          exclude: ['lib/api/fuzz.test.ts'],
          env: { TEST_DB: 'postgres', DATABASE_PREPARE: '0', APP_SECRET: 'test-secret-of-at-least-32-bytes-0123456789', WEBHOOK_ALLOW_PRIVATE: '1' },
          globalSetup: ['lib/testing/pgbouncer-setup.ts'],
        },
      },
    ],
  },
});
