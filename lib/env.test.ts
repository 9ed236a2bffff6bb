import { describe, expect, it } from 'vitest';
import { ConfigError, ENV_NAMES, loadEnv, setting, testSettingsLifted, withSettings } from './env';

const SECRET = 'env-test-secret-of-at-least-32-bytes-0123';

function problems(source: Record<string, string>): string[] {
  try {
    loadEnv(source);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('the configuration was taken');
}

describe('the configuration schema', () => {
  it('gives every setting its documented default, and takes an empty value as unset', () => {
    const env = loadEnv({ PORT: '', WORKER: ' ' });
    expect(env).toMatchObject({
      PORT: 3000,
      DATA_DIR: '.data',
      WORKER: true,
      WORKER_INTERVAL_MS: 1000,
      MIGRATE: true,
      DATABASE_PREPARE: true,
      DATABASE_POOL_SIZE: 10,
      RATE_LIMIT_PER_SECOND: 5000,
      PUBLIC_RATE_LIMIT_PER_MINUTE: 10,
      STRIPE_TIMEOUT_MS: 20_000,
      WEBHOOK_TIMEOUT_MS: 10_000,
      WEBHOOK_ALLOW_PRIVATE: false,
      WEBHOOK_LOG_RETENTION_DAYS: 30,
      COLLECTOR_LINK_TTL_HOURS: 72,
      WEB_CONCURRENCY: 1,
      SHUTDOWN_TIMEOUT_MS: 25_000,
      SHUTDOWN_DELAY_MS: 0,
      LOG_LEVEL: 'info',
      BILLING_TEST_CLOCK: false,
      OTEL_SDK_DISABLED: false,
    });
    for (const name of ['DATABASE_URL', 'APP_SECRET', 'METRICS_TOKEN', 'WORKER_HEALTH_PORT', 'OTEL_EXPORTER_OTLP_ENDPOINT', 'PUBLIC_URL'] as const) expect(env[name], name).toBeUndefined();
  });

  it('reads what it is given, as the types the code uses', () => {
    const env = loadEnv({
      DATABASE_URL: 'postgresql://billing:pw@db:5432/billing',
      APP_SECRET: SECRET,
      WORKER: '0',
      MIGRATE: '0',
      RATE_LIMIT_PER_SECOND: '0',
      WORKER_HEALTH_PORT: '0',
      LOG_LEVEL: ' DEBUG ',
      PUBLIC_URL: 'https://billing.example.com/',
      WEBHOOK_LOG_RETENTION_DAYS: '7',
      OTEL_SDK_DISABLED: 'TRUE',
    });
    expect(env).toMatchObject({ WORKER: false, MIGRATE: false, RATE_LIMIT_PER_SECOND: 0, WORKER_HEALTH_PORT: 0, LOG_LEVEL: 'debug', PUBLIC_URL: 'https://billing.example.com', WEBHOOK_LOG_RETENTION_DAYS: 7, OTEL_SDK_DISABLED: true });
  });

  it('refuses a value that is not what a variable takes, naming it, what it expects and what it got', () => {
    expect(problems({ WORKER_INTERVAL_MS: 'abc' })).toEqual(['WORKER_INTERVAL_MS must be a whole number of milliseconds, 10 to 2147483647; got "abc".']);
    // Beyond what a timer holds (Node would fire it after 1 ms): every attempt would time out at once.
    expect(problems({ WEBHOOK_TIMEOUT_MS: '3000000000', STRIPE_TIMEOUT_MS: '2147483648' })).toEqual([
      'STRIPE_TIMEOUT_MS must be a whole number of milliseconds, 1 to 2147483647; got "2147483648".',
      'WEBHOOK_TIMEOUT_MS must be a whole number of milliseconds, 1 to 2147483647; got "3000000000".',
    ]);
    expect(problems({ RATE_LIMIT_PER_SECOND: 'abc' })).toEqual(['RATE_LIMIT_PER_SECOND must be a whole number of requests per second (0 turns the limit off); got "abc".']);
    // Each kind of wrong: not a number, a fraction, negative, out of range, a word for a flag, a URL of another kind.
    const wrong: Record<string, string> = {
      WORKER_INTERVAL_MS: '0',
      PUBLIC_RATE_LIMIT_PER_MINUTE: '1.5',
      SHUTDOWN_TIMEOUT_MS: '-1',
      PORT: '70000',
      WEB_CONCURRENCY: '0',
      WEBHOOK_LOG_RETENTION_DAYS: 'forever',
      MIGRATE: 'no',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      LOG_LEVEL: 'verbose',
      PG_PLAN_CACHE_MODE: 'fast',
      STRIPE_API_URL: 'stripe.local:12111',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://collector:4317',
      NODE_ENV: 'staging',
    };
    const said = problems(wrong);
    expect(said).toHaveLength(Object.keys(wrong).length);
    for (const [name, value] of Object.entries(wrong)) expect(said.some((p) => p.startsWith(`${name} must be `) && p.endsWith(`; got "${value}".`)), name).toBe(true);
  });

  it('does not repeat the credentials of a URL it refuses', () => {
    const said = problems({ STRIPE_API_URL: 'ftp://stripe-user:hunter2@stripe.internal/v1', OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' });
    expect(said[0]).toBe('STRIPE_API_URL must be an http or https URL of a Stripe-compatible API; got "ftp://***@stripe.internal/v1".');
    expect(said.join('\n')).not.toContain('hunter2');
    // Without a scheme, and with an @ in the password.
    expect(problems({ OTEL_EXPORTER_OTLP_ENDPOINT: 'user:pw@collector:4318' })[0]).toContain('got "***@collector:4318"');
    expect(problems({ STRIPE_API_URL: 'ftp://u:p@ss@host/v1' })[0]).toContain('got "ftp://***@host/v1"');
    expect(problems({ STRIPE_API_URL: 'ftp://user:pa/ss?x#y@host/v1' })[0]).toContain('got "ftp://***@host/v1"');
  });

  it('takes an operator token of 16 printable characters, and none shorter or with a space', () => {
    expect(loadEnv({ ADMIN_TOKEN: 'abcdefghijklmnop' }).ADMIN_TOKEN).toBe('abcdefghijklmnop');
    expect(problems({ ADMIN_TOKEN: 'abcdefghijklmno' })).toHaveLength(1);
    expect(problems({ ADMIN_TOKEN: 'abcdefgh ijklmnop' })).toHaveLength(1);
  });

  it('takes a shutdown delay only below the shutdown timeout, which it is spent within', () => {
    expect(loadEnv({ SHUTDOWN_DELAY_MS: '5000' })).toMatchObject({ SHUTDOWN_DELAY_MS: 5000, SHUTDOWN_TIMEOUT_MS: 25_000 });
    expect(problems({ SHUTDOWN_DELAY_MS: '25000' })).toEqual(['SHUTDOWN_DELAY_MS must be a whole number of milliseconds, less than SHUTDOWN_TIMEOUT_MS; got "25000". SHUTDOWN_TIMEOUT_MS is 25000.']);
    expect(problems({ SHUTDOWN_DELAY_MS: '3000', SHUTDOWN_TIMEOUT_MS: '2000' })).toHaveLength(1);
    expect(problems({ SHUTDOWN_DELAY_MS: 'soon' })).toEqual(['SHUTDOWN_DELAY_MS must be a whole number of milliseconds, less than SHUTDOWN_TIMEOUT_MS; got "soon".']);
    // 0 (the default) goes with any timeout, 0 included.
    expect(loadEnv({ SHUTDOWN_DELAY_MS: '0', SHUTDOWN_TIMEOUT_MS: '0' })).toMatchObject({ SHUTDOWN_DELAY_MS: 0 });
  });

  it('takes the longest timer there is', () => {
    expect(loadEnv({ WEBHOOK_TIMEOUT_MS: '2147483647', SHUTDOWN_TIMEOUT_MS: '2147483647' })).toMatchObject({ WEBHOOK_TIMEOUT_MS: 2147483647, SHUTDOWN_TIMEOUT_MS: 2147483647 });
  });

  it('never repeats a secret it refuses', () => {
    const said = problems({ METRICS_TOKEN: 'tiny secret', APP_SECRET: 'short-secret', DATABASE_URL: 'mysql://root:hunter2@db/billing', ADMIN_TOKEN: 'letmein' });
    expect(said).toEqual([
      'DATABASE_URL must be a postgres:// or postgresql:// URL, naming one host or several (host1:5432,host2:5432) with an optional target_session_attrs.',
      'ADMIN_TOKEN must be at least 16 printable ASCII characters without spaces (e.g. `openssl rand -hex 24`), or unset.',
      'APP_SECRET must be at least 32 bytes long (it has 12): use a random value, e.g. `openssl rand -base64 32`.',
      'METRICS_TOKEN must be at least 16 printable ASCII characters without spaces (or unset, which turns /metrics off).',
    ]);
  });

  it('needs APP_SECRET on PostgreSQL, where every process must share it', () => {
    expect(problems({ DATABASE_URL: 'postgres://billing@db/billing' })).toEqual([
      'APP_SECRET must be set when running on PostgreSQL (DATABASE_URL): at least 32 random bytes, e.g. `openssl rand -base64 32`.',
    ]);
    expect(loadEnv({ DATABASE_URL: 'postgres://billing@db/billing', APP_SECRET: SECRET }).DATABASE_URL).toBe('postgres://billing@db/billing');
    // db:migrate seals and opens nothing.
    expect(loadEnv({ DATABASE_URL: 'postgres://billing@db/billing' }, { needsAppSecret: false }).DATABASE_URL).toBe('postgres://billing@db/billing');
  });

  it('reads one setting as it is now, and refuses it when it changed to nonsense', () => {
    const outside = setting('WORKER_INTERVAL_MS');
    expect(withSettings({ WORKER_INTERVAL_MS: '250' }, () => setting('WORKER_INTERVAL_MS'))).toBe(250);
    expect(withSettings({ WORKER_INTERVAL_MS: '500' }, () => setting('WORKER_INTERVAL_MS'))).toBe(500);
    expect(() => withSettings({ WORKER_INTERVAL_MS: 'abc' }, () => setting('WORKER_INTERVAL_MS'))).toThrow(
      'WORKER_INTERVAL_MS must be a whole number of milliseconds, 10 to 2147483647; got "abc".',
    );
    expect(withSettings({ WORKER_INTERVAL_MS: undefined }, () => setting('WORKER_INTERVAL_MS'))).toBe(1000);
    expect(setting('WORKER_INTERVAL_MS')).toBe(outside);
  });

  it('takes other values only inside withSettings: for what it starts, nested, and for nothing outside it', async () => {
    const read = () => [setting('WORKER_INTERVAL_MS'), setting('METRICS_TOKEN')];
    const outside = read();
    let later: unknown;
    const inside = withSettings({ WORKER_INTERVAL_MS: '250', METRICS_TOKEN: 'metrics-token-0123456789' }, async () => {
      await new Promise((r) => setTimeout(r, 10));
      setTimeout(() => (later = read()), 10);
      // A nested call overrides some, keeps the rest, and unsets with undefined.
      expect(withSettings({ METRICS_TOKEN: undefined }, read)).toEqual([250, undefined]);
      return read();
    });
    // Outside, while the work inside is still under way.
    expect(read()).toEqual(outside);
    expect(await inside).toEqual([250, 'metrics-token-0123456789']);
    await new Promise((r) => setTimeout(r, 30));
    expect(later).toEqual([250, 'metrics-token-0123456789']);
    expect(read()).toEqual(outside);
  });

  it('leaves the test suite’s own variables out', () => {
    for (const name of ['TEST_DB', 'TEST_PG_PORT', 'E2E_PORT', 'PG_BIN', 'PG_DURABLE']) expect(ENV_NAMES).not.toContain(name);
    expect(() => loadEnv({ TEST_PG_PORT: 'not a port', TEST_DB: 'postgres' })).not.toThrow();
  });
});

describe('test settings in production', () => {
  it('refuses BILLING_TEST_CLOCK=1 and WEBHOOK_ALLOW_PRIVATE=1 with NODE_ENV=production, each named', () => {
    expect(problems({ NODE_ENV: 'production', BILLING_TEST_CLOCK: '1', WEBHOOK_ALLOW_PRIVATE: '1' })).toEqual([
      expect.stringMatching(/^BILLING_TEST_CLOCK=1 is refused with NODE_ENV=production: .*ADMIN_TOKEN/),
      expect.stringMatching(/^WEBHOOK_ALLOW_PRIVATE=1 is refused with NODE_ENV=production: .*private/),
    ]);
    expect(problems({ NODE_ENV: 'production', WEBHOOK_ALLOW_PRIVATE: '1' })).toHaveLength(1);
    for (const nodeEnv of ['development', 'test', '']) expect(loadEnv({ NODE_ENV: nodeEnv, BILLING_TEST_CLOCK: '1', WEBHOOK_ALLOW_PRIVATE: '1' }).BILLING_TEST_CLOCK).toBe(true);
    expect(loadEnv({ NODE_ENV: 'production', BILLING_TEST_CLOCK: '0', WEBHOOK_ALLOW_PRIVATE: '0' }).NODE_ENV).toBe('production');
  });

  it('lets only the image tests opt out, and never with a live key in the environment', () => {
    expect(loadEnv({ NODE_ENV: 'production', WEBHOOK_ALLOW_PRIVATE: '1', ALLOW_TEST_SETTINGS_IN_PRODUCTION: '1' }).WEBHOOK_ALLOW_PRIVATE).toBe(true);
    const said = problems({ NODE_ENV: 'production', WEBHOOK_ALLOW_PRIVATE: '1', ALLOW_TEST_SETTINGS_IN_PRODUCTION: '1', STRIPE_KEY: 'sk_live_123' });
    expect(said).toEqual([expect.stringMatching(/^WEBHOOK_ALLOW_PRIVATE=1 is refused while STRIPE_KEY holds a live Stripe key/)]);
    expect(said[0]).not.toContain('sk_live_123');
    expect(problems({ BILLING_TEST_CLOCK: '1', PK: 'pk_live_1' })).toHaveLength(1);
    expect(problems({ ALLOW_TEST_SETTINGS_IN_PRODUCTION: 'yes' })[0]).toMatch(/^ALLOW_TEST_SETTINGS_IN_PRODUCTION must be 1/);
  });

  it('has every process say at start that the opt-out let a test setting run in production, and nothing when it lifted nothing', () => {
    const lifted = (source: Record<string, string>) => testSettingsLifted(loadEnv(source), source.NODE_ENV);
    expect(lifted({ NODE_ENV: 'production', BILLING_TEST_CLOCK: '1', WEBHOOK_ALLOW_PRIVATE: '1', ALLOW_TEST_SETTINGS_IN_PRODUCTION: '1' })).toMatch(
      /^BILLING_TEST_CLOCK=1 and WEBHOOK_ALLOW_PRIVATE=1 run with NODE_ENV=production only because ALLOW_TEST_SETTINGS_IN_PRODUCTION=1.*never set it in a deployment/,
    );
    expect(lifted({ NODE_ENV: 'production', ALLOW_TEST_SETTINGS_IN_PRODUCTION: '1' })).toBeNull();
    expect(lifted({ NODE_ENV: 'development', WEBHOOK_ALLOW_PRIVATE: '1', ALLOW_TEST_SETTINGS_IN_PRODUCTION: '1' })).toBeNull();
    expect(lifted({ NODE_ENV: 'development', WEBHOOK_ALLOW_PRIVATE: '1' })).toBeNull();
  });

  it('reads NODE_ENV as the server launcher found it, not as it set it for Next.js', () => {
    const launcher = globalThis as { __billingStartedNodeEnv?: string | null };
    const saved = { ...process.env };
    try {
      Object.assign(process.env, { NODE_ENV: 'production', WEBHOOK_ALLOW_PRIVATE: '1' });
      launcher.__billingStartedNodeEnv = null;
      expect(loadEnv().WEBHOOK_ALLOW_PRIVATE).toBe(true);
      launcher.__billingStartedNodeEnv = 'production';
      expect(() => loadEnv()).toThrow(/WEBHOOK_ALLOW_PRIVATE=1 is refused with NODE_ENV=production/);
    } finally {
      delete launcher.__billingStartedNodeEnv;
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
  });
});
