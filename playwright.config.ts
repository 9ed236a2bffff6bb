import { defineConfig } from '@playwright/test';
import { e2eAdminToken } from './e2e/companies';

const port = Number(process.env.E2E_PORT ?? 3210);
export const baseURL = `http://127.0.0.1:${port}`;
export const e2eDataDir = '.test-data/e2e';

export default defineConfig({
  testDir: 'e2e',
  outputDir: 'test-results/e2e',
  timeout: 60_000,
  // Sign-in and password changes hash with scrypt at N = 2^17: on a busy machine that alone can take seconds.
  expect: { timeout: 15_000 },
  // Two workers (E2E_WORKERS), each with a company of its own (e2e/global-setup.ts), against one
  // server: much of a test's time is the browser and the server waiting on each other, or on a
  // password hash, which the other worker's test can use. The tests of one file run in order
  // (console-team.spec.ts's excepted). The operator token registers the workers' companies; no
  // test moves this server's clock, which both workers share (the past-due portal test starts a
  // server of its own).
  workers: Number(process.env.E2E_WORKERS ?? 2),
  globalSetup: './e2e/global-setup.ts',
  retries: 0,
  reporter: [['list'], ['json', { outputFile: 'test-results/playwright.json' }]],
  use: {
    baseURL,
    screenshot: 'on',
    // A failed test keeps its trace (each action's DOM, the network, the console), without the
    // screencast: recording every test's frames cost the step about 40 s of its 240 on two cores
    // (bench/README.md, "The browser tests' traces"). The last screenshot of each test is kept.
    trace: { mode: 'retain-on-failure', screenshots: false },
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: ['--no-sandbox', '--headless', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
    },
  },
  webServer: {
    // The server's log lines go where `npm test` searches them for secrets (scripts/scan-test-logs.ts).
    command: `rm -rf ${e2eDataDir} && mkdir -p test-results/logs && node scripts/start.mjs > test-results/logs/playwright-server.log 2>&1`,
    url: `${baseURL}/health`,
    reuseExistingServer: false,
    timeout: 240_000,
    stdout: 'pipe',
    // The collector tests submit from one address faster than a customer would. A test that
    // signs in from an address of its own names it in X-Forwarded-For, as a proxy would.
    // KEEP_ALIVE_TIMEOUT: a test's API client keeps its connection idle while the browser works;
    // at Node.js' default 5 s the server could close it just as the client sent on it again (read
    // ECONNRESET). The README gives a load balancer the same advice: keep idle connections for
    // less time than the service does.
    env: { KEEP_ALIVE_TIMEOUT: '65000', TRUSTED_PROXIES: '1', PORT: String(port), DATA_DIR: e2eDataDir, PUBLIC_URL: baseURL, BILLING_TEST_CLOCK: '1', ADMIN_TOKEN: e2eAdminToken, WEBHOOK_ALLOW_PRIVATE: '1', PUBLIC_RATE_LIMIT_PER_MINUTE: '100' },
  },
});
