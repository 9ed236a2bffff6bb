// What the SDK's tests run against: the built application started as a process (on an embedded
// database of its own: what the SDK sends and reads does not depend on the engine, whose own
// tests run on both), the local Stripe-compatible server, and companies registered through the
// SDK itself with the operator token. They run once, in the unit project.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { afterAll, beforeAll } from 'vitest';
import { startAppServer, type AppServer } from '../../lib/testing/servers';
import { migratedDataDir } from '../../lib/testing/templates';
import { startLocalStripe, type LocalStripeServer } from '../../lib/processor/local-stripe/server';
import { Billing, type ClientOptions } from '../src/index';

export const ADMIN_TOKEN = 'sdk-admin-token-0123';

export type SdkServer = {
  url: string;
  stripe: LocalStripeServer;
  /** The started application, for its output. */
  app: () => AppServer;
  /** Starts another application process on the same database (e.g. with other settings). */
  startAnother: (env: Record<string, string>) => Promise<AppServer>;
  /** An operator client: registers companies, moves the test clock. */
  admin: (options?: Partial<ClientOptions>) => Billing;
  /** Registers a company (with its own processor namespace) and answers a client for it. */
  newCompany: (options?: Partial<ClientOptions> & { baseUrl?: string }) => Promise<{ billing: Billing; companyId: string; apiKey: string }>;
};

/**
 * Starts, for this test file, the application with the operator token, the test clock, and
 * webhooks allowed to reach 127.0.0.1, plus the local Stripe server.
 */
export function useSdkServer(env: Record<string, string> = {}): SdkServer {
  const started: AppServer[] = [];
  const dirs: string[] = [];
  let stripe: LocalStripeServer | undefined;

  const startOne = async (extra: Record<string, string>) => {
    const base: Record<string, string> = {
      ADMIN_TOKEN,
      BILLING_TEST_CLOCK: '1',
      WEBHOOK_ALLOW_PRIVATE: '1',
      STRIPE_API_URL: stripe!.url,
      APP_SECRET: 'test-secret-of-at-least-32-bytes-0123456789',
      WORKER_INTERVAL_MS: '200',
    };
    // The embedded database belongs to one process: another server gets a directory of its own.
    const dir = await migratedDataDir('sdk-');
    dirs.push(dir);
    base.DATA_DIR = dir;
    const server = await startAppServer({ ...base, ...env, ...extra });
    started.push(server);
    return server;
  };

  beforeAll(async () => {
    stripe = await startLocalStripe({ port: 0 });
    await startOne({});
  });
  afterAll(async () => {
    await Promise.all(started.map((s) => s.stop()));
    await stripe?.close();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  const handle: SdkServer = {
    get url() {
      return started[0].url;
    },
    get stripe() {
      return stripe!;
    },
    app: () => started[0],
    startAnother: startOne,
    admin: (options = {}) => new Billing({ baseUrl: started[0].url, adminToken: ADMIN_TOKEN, ...options }),
    async newCompany(options = {}) {
      const baseUrl = options.baseUrl ?? started[0].url;
      const suffix = randomBytes(6).toString('hex');
      const company = await new Billing({ baseUrl, adminToken: ADMIN_TOKEN }).companies.create({
        name: `SDK ${suffix}`,
        email: `sdk-${suffix}@example.com`,
        processor_key: `sk_test_sdk_${suffix}`,
        processor_publishable_key: `pk_test_sdk_${suffix}`,
      });
      const billing = new Billing({ companyId: company.id, apiKey: company.api_key, ...options, baseUrl });
      return { billing, companyId: company.id, apiKey: company.api_key };
    },
  };
  return handle;
}
