import { AsyncLocalStorage } from 'node:async_hooks';
import { z } from 'zod';
import { parsePostgresUrl } from './net/postgres-url';

/**
 * Every environment variable the service reads, in one schema. Each process checks the whole of
 * it before it does anything else (lib/boot.ts, scripts/serve.mjs, scripts/start.mjs,
 * scripts/worker.ts, scripts/migrate.ts): a value that is not what the variable takes stops the
 * start with the variable's name and what it expects, instead of being taken for a default, for
 * zero or for "off". Code reads its settings through `setting(name)`, never raw process.env.
 * An empty value means unset. The README's configuration table lists exactly these variables
 * (scripts/config.test.ts holds them together).
 */

const blank = (v: unknown) => (typeof v === 'string' && v.trim() === '' ? undefined : v);
const digits = z.string().trim().regex(/^\d+$/).transform(Number);
const whole = (min: number, max = Number.MAX_SAFE_INTEGER) => digits.pipe(z.number().int().min(min).max(max));
const port = whole(0, 65535);
/** Milliseconds a timer can hold: Node turns a longer setTimeout into 1 ms. */
const MAX_TIMER_MS = 2_147_483_647;
const ms = (min: number) => whole(min, MAX_TIMER_MS);
const flag = z.enum(['0', '1']).transform((v) => v === '1');
const httpUrl = z.string().trim().pipe(z.url({ protocol: /^https?$/ }));
/** One host or several (`host1:5432,host2:5432`), with an optional `target_session_attrs`. */
const postgresUrl = z.string().trim().refine((u) => {
  try {
    parsePostgresUrl(u);
    return true;
  } catch {
    return false;
  }
});

/** Why a PostgreSQL URL is refused, without repeating it (it holds a password). */
function postgresUrlProblem(raw: string): string {
  try {
    parsePostgresUrl(raw);
    return '';
  } catch (err) {
    const why = (err as Error).message;
    return why.startsWith('is not a postgres') ? '' : ` (this one ${why})`;
  }
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export const envSchema = z.object({
  NODE_ENV: z.preprocess(blank, z.enum(['development', 'production', 'test']).optional()),
  PORT: z.preprocess(blank, port.default(3000)),
  HOSTNAME: z.preprocess(blank, z.string().optional()),
  KEEP_ALIVE_TIMEOUT: z.preprocess(blank, ms(0).optional()),
  REQUEST_TIMEOUT_MS: z.preprocess(blank, ms(1000).default(30_000)),
  PUBLIC_URL: z.preprocess(blank, httpUrl.transform((u) => u.replace(/\/$/, '')).optional()),
  DATABASE_URL: z.preprocess(blank, postgresUrl.optional()),
  DATABASE_REPLICA_URL: z.preprocess(blank, postgresUrl.optional()),
  DATABASE_POOL_SIZE: z.preprocess(blank, whole(1, 1000).default(10)),
  DATABASE_PREPARE: z.preprocess(blank, flag.default(true)),
  PG_PLAN_CACHE_MODE: z.preprocess(blank, z.enum(['auto', 'force_custom_plan', 'force_generic_plan']).optional()),
  MIGRATE: z.preprocess(blank, flag.default(true)),
  DATA_DIR: z.preprocess(blank, z.string().default('.data')),
  ADMIN_TOKEN: z.preprocess(blank, z.string().regex(/^[\x21-\x7e]{16,}$/).optional()),
  APP_SECRET: z.preprocess(blank, z.string().refine((s) => Buffer.byteLength(s, 'utf8') >= 32).optional()),
  APP_SECRET_PREVIOUS: z.preprocess(blank, z.string().optional()),
  NEXTAUTH_URL: z.preprocess(blank, httpUrl.optional()),
  NEXTAUTH_SECRET: z.preprocess(blank, z.string().refine((s) => Buffer.byteLength(s, 'utf8') >= 32).optional()),
  STRIPE_API_URL: z.preprocess(blank, httpUrl.optional()),
  STRIPE_TIMEOUT_MS: z.preprocess(blank, ms(1).default(20_000)),
  LOCAL_STRIPE_PORT: z.preprocess(blank, port.optional()),
  BILLING_TEST_CLOCK: z.preprocess(blank, flag.default(false)),
  WORKER: z.preprocess(blank, flag.default(true)),
  DEMO_COMPANY: z.preprocess(blank, flag.default(true)),
  WORKER_INTERVAL_MS: z.preprocess(blank, ms(10).default(1000)),
  WORKER_HEALTH_PORT: z.preprocess(blank, port.optional()),
  RATE_LIMIT_PER_SECOND: z.preprocess(blank, whole(0).default(5000)),
  PUBLIC_RATE_LIMIT_PER_MINUTE: z.preprocess(blank, whole(0).default(10)),
  AUTH_FAILURES_PER_MINUTE: z.preprocess(blank, whole(0).default(60)),
  COMPANY_CONCURRENCY: z.preprocess(blank, whole(0).default(256)),
  TRUSTED_PROXIES: z.preprocess(blank, whole(0, 10).default(0)),
  COLLECTOR_LINK_TTL_HOURS: z.preprocess(blank, whole(1).default(72)),
  WEBHOOK_TIMEOUT_MS: z.preprocess(blank, ms(1).default(10_000)),
  WEBHOOK_ALLOW_PRIVATE: z.preprocess(blank, flag.default(false)),
  ALLOW_TEST_SETTINGS_IN_PRODUCTION: z.preprocess(blank, flag.default(false)),
  WEBHOOK_LOG_RETENTION_DAYS: z.preprocess(blank, whole(1, 36_500).default(30)),
  WEB_CONCURRENCY: z.preprocess(blank, whole(1, 1024).default(1)),
  SHUTDOWN_TIMEOUT_MS: z.preprocess(blank, ms(0).default(25_000)),
  SHUTDOWN_DELAY_MS: z.preprocess(blank, ms(0).default(0)),
  LOG_LEVEL: z.preprocess(blank, z.string().trim().toLowerCase().pipe(z.enum(LOG_LEVELS)).default('info')),
  METRICS_TOKEN: z.preprocess(blank, z.string().regex(/^[\x21-\x7e]{16,}$/).optional()),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.preprocess(blank, httpUrl.optional()),
  OTEL_SDK_DISABLED: z.preprocess(blank, z.string().trim().toLowerCase().pipe(z.enum(['true', 'false'])).transform((v) => v === 'true').default(false)),
});

export type Env = z.output<typeof envSchema>;
export type EnvName = keyof Env;
export const ENV_NAMES = Object.keys(envSchema.shape) as EnvName[];

/** What each variable takes, said after "NAME must be". Secrets are never echoed back. */
const EXPECTS: Record<EnvName, { expects: string | ((raw: string) => string); secret?: boolean }> = {
  NODE_ENV: { expects: 'development, production or test' },
  PORT: { expects: 'a TCP port number (0 to 65535)' },
  HOSTNAME: { expects: 'a host name or address to listen on' },
  KEEP_ALIVE_TIMEOUT: { expects: 'a whole number of milliseconds, at most 2147483647' },
  REQUEST_TIMEOUT_MS: { expects: 'a whole number of milliseconds, 1000 to 2147483647' },
  PUBLIC_URL: { expects: 'an http or https URL (the base of the links the service hands out)' },
  DATABASE_URL: {
    expects: (raw) => `a postgres:// or postgresql:// URL, naming one host or several (host1:5432,host2:5432) with an optional target_session_attrs${postgresUrlProblem(raw)}`,
    secret: true,
  },
  DATABASE_REPLICA_URL: {
    expects: (raw) => `a postgres:// or postgresql:// URL of a replica (or several hosts, e.g. with target_session_attrs=prefer-standby)${postgresUrlProblem(raw)}`,
    secret: true,
  },
  DATABASE_POOL_SIZE: { expects: 'a whole number of connections, 1 to 1000' },
  DATABASE_PREPARE: { expects: '0 (send statements unprepared) or 1' },
  PG_PLAN_CACHE_MODE: { expects: 'one of auto, force_custom_plan, force_generic_plan' },
  MIGRATE: { expects: '0 (leave migrating to `npm run db:migrate`) or 1' },
  DATA_DIR: { expects: 'a directory' },
  ADMIN_TOKEN: { expects: 'at least 16 printable ASCII characters without spaces (e.g. `openssl rand -hex 24`), or unset', secret: true },
  APP_SECRET: {
    expects: (raw) => `at least 32 bytes long (it has ${Buffer.byteLength(raw, 'utf8')}): use a random value, e.g. \`openssl rand -base64 32\``,
    secret: true,
  },
  APP_SECRET_PREVIOUS: { expects: 'the secret APP_SECRET replaced', secret: true },
  NEXTAUTH_URL: { expects: 'an http or https URL' },
  NEXTAUTH_SECRET: {
    expects: (raw) => `at least 32 bytes long (it has ${Buffer.byteLength(raw, 'utf8')}): it signs console sessions; use a random value, e.g. \`openssl rand -base64 32\`, or leave it unset to derive it from APP_SECRET`,
    secret: true,
  },
  STRIPE_API_URL: { expects: 'an http or https URL of a Stripe-compatible API' },
  STRIPE_TIMEOUT_MS: { expects: 'a whole number of milliseconds, 1 to 2147483647' },
  LOCAL_STRIPE_PORT: { expects: 'a TCP port number (0 to 65535)' },
  BILLING_TEST_CLOCK: { expects: '1 (test clock on) or 0' },
  WORKER: { expects: '0 (no worker in this process) or 1' },
  DEMO_COMPANY: { expects: '0 (no demo company on a fresh embedded database) or 1' },
  WORKER_INTERVAL_MS: { expects: 'a whole number of milliseconds, 10 to 2147483647' },
  WORKER_HEALTH_PORT: { expects: 'a TCP port number (0 to 65535)' },
  RATE_LIMIT_PER_SECOND: { expects: 'a whole number of requests per second (0 turns the limit off)' },
  PUBLIC_RATE_LIMIT_PER_MINUTE: { expects: 'a whole number of requests per minute (0 turns the limit off)' },
  AUTH_FAILURES_PER_MINUTE: { expects: 'a whole number of requests with wrong credentials per minute (0 turns the limit off)' },
  COMPANY_CONCURRENCY: { expects: 'a whole number of requests one company may have in flight at once in each process (0 turns the cap off)' },
  TRUSTED_PROXIES: { expects: 'the number of reverse proxies in front of the service that append to X-Forwarded-For, 0 to 10' },
  COLLECTOR_LINK_TTL_HOURS: { expects: 'a whole number of hours, 1 or more' },
  WEBHOOK_TIMEOUT_MS: { expects: 'a whole number of milliseconds, 1 to 2147483647' },
  WEBHOOK_ALLOW_PRIVATE: { expects: '1 (webhooks may reach non-public addresses) or 0' },
  ALLOW_TEST_SETTINGS_IN_PRODUCTION: { expects: "1 (the service's own tests of its production image only) or 0" },
  WEBHOOK_LOG_RETENTION_DAYS: { expects: 'a whole number of days, 1 to 36500' },
  WEB_CONCURRENCY: { expects: 'a whole number of processes, 1 or more' },
  SHUTDOWN_TIMEOUT_MS: { expects: 'a whole number of milliseconds, at most 2147483647' },
  SHUTDOWN_DELAY_MS: { expects: 'a whole number of milliseconds, less than SHUTDOWN_TIMEOUT_MS' },
  LOG_LEVEL: { expects: `one of ${LOG_LEVELS.join(', ')}` },
  METRICS_TOKEN: { expects: 'at least 16 printable ASCII characters without spaces (or unset, which turns /metrics off)', secret: true },
  OTEL_EXPORTER_OTLP_ENDPOINT: { expects: 'an http or https URL of an OTLP/HTTP receiver (e.g. http://otel-collector:4318)' },
  OTEL_SDK_DISABLED: { expects: 'true or false' },
};

/** A configuration the process cannot run with; `problems` has one sentence per variable. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
    this.name = 'ConfigError';
  }
}

function describeProblem(name: EnvName, raw: string | undefined): string {
  const { expects, secret } = EXPECTS[name];
  const text = typeof expects === 'function' ? expects(raw ?? '') : expects;
  // A URL's credentials are not repeated either (STRIPE_API_URL=https://user:pass@host...).
  // Up to the last @ of the value: a password may hold /, ? or # unencoded (too much hidden beats too little).
  const shown = raw?.replace(/^((?:[a-z][a-z0-9+.-]*:)?\/\/)?.*@/is, '$1***@');
  return secret ? `${name} must be ${text}.` : `${name} must be ${text}; got "${shown}".`;
}

function raw(source: Record<string, string | undefined>): Record<EnvName, string | undefined> {
  return Object.fromEntries(ENV_NAMES.map((n) => [n, source[n]])) as Record<EnvName, string | undefined>;
}

/**
 * The whole configuration, checked: every variable, and the rules between them. Throws a
 * ConfigError naming every variable that is wrong.
 */
export function loadEnv(source: Record<string, string | undefined> = process.env, opts: { needsAppSecret?: boolean } = {}): Env {
  const values = raw(source);
  const result = envSchema.safeParse(values);
  if (!result.success) {
    const names = [...new Set(result.error.issues.map((i) => i.path[0] as EnvName))];
    throw new ConfigError(names.map((n) => describeProblem(n, values[n])));
  }
  const env = result.data;
  if (env.SHUTDOWN_DELAY_MS > 0 && env.SHUTDOWN_DELAY_MS >= env.SHUTDOWN_TIMEOUT_MS) {
    // The delay is spent within the timeout: the requests under way need some of it too.
    throw new ConfigError([describeProblem('SHUTDOWN_DELAY_MS', values.SHUTDOWN_DELAY_MS) + ` SHUTDOWN_TIMEOUT_MS is ${env.SHUTDOWN_TIMEOUT_MS}.`]);
  }
  // Every process on one PostgreSQL has to seal and open the same stored secrets (db:migrate
  // touches none of them).
  if (env.DATABASE_REPLICA_URL && !env.DATABASE_URL) {
    throw new ConfigError(['DATABASE_REPLICA_URL needs DATABASE_URL: replicas serve reads beside a PostgreSQL primary, not beside the embedded database.']);
  }
  const refused = testSettingsRefusal(env, { nodeEnv: startedNodeEnv(source, values.NODE_ENV), liveKeyIn: liveKeyVariable(source) });
  if (refused.length) throw new ConfigError(refused);
  if (opts.needsAppSecret !== false && env.DATABASE_URL && !env.APP_SECRET) {
    throw new ConfigError(['APP_SECRET must be set when running on PostgreSQL (DATABASE_URL): at least 32 random bytes, e.g. `openssl rand -base64 32`.']);
  }
  return env;
}

/** The settings made for development and tests that must never meet real customers or real money. */
export const TEST_SETTINGS = ['BILLING_TEST_CLOCK', 'WEBHOOK_ALLOW_PRIVATE'] as const;
const TEST_SETTING_RISKS: Record<(typeof TEST_SETTINGS)[number], string> = {
  BILLING_TEST_CLOCK: "the test clock lets whoever holds ADMIN_TOKEN move the service's time, and with it renewals, expiries and charges",
  WEBHOOK_ALLOW_PRIVATE: "it lets every company's webhooks reach loopback, private and link-local addresses inside your network",
};
const LIVE_KEY = /^(sk|rk|pk)_live_/;

/** The first variable of `source` that holds a live Stripe key (its name; the key is never repeated). */
export function liveKeyVariable(source: Record<string, string | undefined>): string | null {
  return Object.entries(source).find(([, value]) => LIVE_KEY.test(value ?? ''))?.[0] ?? null;
}

/**
 * NODE_ENV as the person starting the service set it. scripts/serve.mjs (and the standalone
 * build's server.js after it) set NODE_ENV=production for Next.js, so serve.mjs keeps what it
 * found first; in any other process, what the environment says.
 */
export function startedNodeEnv(source: Record<string, string | undefined> = process.env, fallback = source.NODE_ENV): string | undefined {
  const launcher = globalThis as { __billingStartedNodeEnv?: string | null };
  if (source === process.env && launcher.__billingStartedNodeEnv !== undefined) return launcher.__billingStartedNodeEnv ?? undefined;
  return fallback;
}

/**
 * Why the test settings that are on may not be, one sentence each; none when they may. Never
 * with live keys (in the environment or, checked once the database is open, stored: `liveKeyIn`
 * then names where): those are real payments. Never in production either, unless
 * ALLOW_TEST_SETTINGS_IN_PRODUCTION=1, which only the service's own tests of its production image
 * set; it never lifts the live-key refusal.
 */
export function testSettingsRefusal(env: Pick<Env, (typeof TEST_SETTINGS)[number] | 'ALLOW_TEST_SETTINGS_IN_PRODUCTION'>, opts: { nodeEnv?: string; liveKeyIn?: string | null }): string[] {
  const on = TEST_SETTINGS.filter((name) => env[name]);
  if (opts.liveKeyIn) {
    return on.map((name) => `${name}=1 is refused while ${opts.liveKeyIn} holds a live Stripe key: ${TEST_SETTING_RISKS[name]}. Unset ${name}.`);
  }
  if (opts.nodeEnv === 'production' && !env.ALLOW_TEST_SETTINGS_IN_PRODUCTION) {
    return on.map((name) => `${name}=1 is refused with NODE_ENV=production: ${TEST_SETTING_RISKS[name]}. Unset ${name}, or use it only in development and tests (without NODE_ENV=production).`);
  }
  return [];
}

/**
 * What a process says at start, as a warning, when ALLOW_TEST_SETTINGS_IN_PRODUCTION=1 is what lets
 * a test setting run under NODE_ENV=production (so that a deployment that has it by mistake shows
 * it in its log); null when it lifts nothing.
 */
export function testSettingsLifted(env: Pick<Env, (typeof TEST_SETTINGS)[number] | 'ALLOW_TEST_SETTINGS_IN_PRODUCTION'>, nodeEnv: string | undefined): string | null {
  const on = TEST_SETTINGS.filter((name) => env[name]);
  if (nodeEnv !== 'production' || !env.ALLOW_TEST_SETTINGS_IN_PRODUCTION || !on.length) return null;
  return `${on.map((name) => `${name}=1`).join(' and ')} run with NODE_ENV=production only because ALLOW_TEST_SETTINGS_IN_PRODUCTION=1, which is for the service's own tests of its image: never set it in a deployment.`;
}

const cache = new Map<EnvName, { raw: string | undefined; value: unknown }>();

/**
 * Throws anywhere but under vitest: for the functions that put a piece of the process's state
 * back as a new process finds it (lib/testing/process-state.ts), which a server must never call.
 */
export function testRunnerOnly(what: string): void {
  if (process.env.VITEST !== 'true') throw new Error(`${what} is for the test runner only`);
}

export type Settings = Partial<Record<EnvName, string | undefined>>;
const overrides = new AsyncLocalStorage<Settings>();

/**
 * Runs `fn` with these values in place of the environment's, for it and all it starts (its
 * promises, timers and callbacks), and for nothing else in the process: how a test tries another
 * setting without changing process.env under the rest of its file. `undefined` unsets a variable.
 */
export function withSettings<T>(values: Settings, fn: () => T): T {
  return overrides.run({ ...overrides.getStore(), ...values }, fn);
}

/**
 * One variable's parsed value. It is parsed again only when the value changed (withSettings,
 * or process.env). Throws a ConfigError when the value is not what the variable takes.
 */
export function setting<K extends EnvName>(name: K): Env[K] {
  const scoped = overrides.getStore();
  const value = scoped && name in scoped ? scoped[name] : process.env[name];
  const hit = cache.get(name);
  if (hit && hit.raw === value) return hit.value as Env[K];
  const result = envSchema.shape[name].safeParse(value);
  if (!result.success) throw new ConfigError([describeProblem(name, value)]);
  cache.set(name, { raw: value, value: result.data });
  return result.data as Env[K];
}

/** The embedded database's directory (DATA_DIR). */
export function dataDir(): string {
  return setting('DATA_DIR');
}

/** Where the service is reached from outside: PUBLIC_URL, or this machine's PORT. */
export function publicUrl(): string {
  return setting('PUBLIC_URL') ?? `http://localhost:${setting('PORT')}`;
}
