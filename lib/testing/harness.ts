import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { afterAll, beforeAll, inject } from 'vitest';
import { openEmbedded, openPostgres, setDatabase, type Database } from '../db/client';
import { createCompany } from '../billing/companies/companies';
import { registerBillingTasks } from '../billing/tasks';
import { dispatch } from './router';
import { clonePostgresTemplate, copyEmbeddedTemplate, databaseUrl } from './templates';
import { setting, withSettings, type Settings } from '../env';

export type TestDb = { database: Database; kind: 'embedded' | 'postgres'; url: string | null };

/**
 * Gives the test file its own database on the project's engine (TEST_DB), cloned from the
 * migrated template its global setup made (lib/testing/templates.ts): a copy of the embedded
 * data directory, or a database on the PostgreSQL cluster created with `TEMPLATE`.
 */
export function useTestDatabase(): TestDb {
  const handle = {} as TestDb;
  let dir: string | null = null;
  // As a server's boot does: the test clock's advance and the worker run the domain's tasks.
  registerBillingTasks();
  beforeAll(async () => {
    if (process.env.TEST_DB === 'postgres') {
      const name = await clonePostgresTemplate(inject('postgresAdminUrl'));
      const url = databaseUrl(inject('postgresUrl'), name);
      handle.database = await openPostgres(url, { max: 20 });
      handle.url = url;
      handle.kind = 'postgres';
    } else {
      dir = copyEmbeddedTemplate(inject('embeddedTemplate'));
      handle.database = await openEmbedded(dir);
      handle.url = null;
      handle.kind = 'embedded';
    }
    setDatabase(handle.database);
  });
  afterAll(async () => {
    await handle.database?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });
  return handle;
}

export type Auth = { companyId: string; apiKey: string } | 'admin' | null;

export type ApiResult<T = any> = { status: number; body: T; headers: Headers };

/** Sends one request through the real route handlers. */
export async function api<T = any>(
  method: string,
  path: string,
  opts: { auth?: Auth; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<ApiResult<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.auth === 'admin') headers.authorization = `Bearer ${setting('ADMIN_TOKEN')}`;
  else if (opts.auth) headers.authorization = `Basic ${Buffer.from(`${opts.auth.companyId}:${opts.auth.apiKey}`).toString('base64')}`;
  let body: string | undefined = opts.raw;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await dispatch(new Request(`http://localhost${path}`, { method, headers, body }));
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    /* not JSON */
  }
  return { status: res.status, body: parsed as T, headers: res.headers };
}

/** A registered company and a client bound to its credentials. */
export async function newCompany(db: TestDb, input: { processor_key?: string; processor_publishable_key?: string; password?: string; name?: string } = {}) {
  const { company, apiKey } = await createCompany({
    db: db.database.db,
    input: { name: input.name ?? 'Acme', email: `owner-${randomBytes(3).toString('hex')}@acme.test`, ...input },
  });
  const auth = { companyId: company.id, apiKey };
  const client = <T = any>(method: string, path: string, opts: { body?: unknown; raw?: string; headers?: Record<string, string> } = {}) =>
    api<T>(method, path.replace('{company}', company.id), { ...opts, auth });
  return { company, auth, apiKey, call: client };
}

/**
 * Starts the project's local Stripe-compatible server for this test file and points the
 * official SDK at it (STRIPE_API_URL). `control` posts to its failure-injection endpoints.
 */
export function useLocalStripe() {
  const handle = { url: '', port: 0 } as { url: string; port: number; close?: () => Promise<void> };
  beforeAll(async () => {
    const { startLocalStripe } = await import('../processor/local-stripe/server');
    const server = await startLocalStripe({ port: 0 });
    handle.url = server.url;
    handle.port = server.port;
    handle.close = server.close;
    process.env.STRIPE_API_URL = server.url;
  });
  afterAll(async () => {
    await handle.close?.();
  });
  return {
    get url() {
      return handle.url;
    },
    async control(path: string, body?: unknown) {
      const res = await fetch(`${handle.url}/__control/${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return res.json();
    },
    stripe(key: string) {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const Stripe = require('stripe') as typeof import('stripe').default;
      return new Stripe(key, { host: '127.0.0.1', port: handle.port, protocol: 'http', maxNetworkRetries: 0 });
    },
  };
}

let keyCounter = 0;
/** A company with its own processor namespace on the local server. */
export async function newPayingCompany(db: TestDb) {
  const suffix = `${process.pid}_${Date.now()}_${keyCounter++}`;
  const co = await newCompany(db, { processor_key: `sk_test_${suffix}`, processor_publishable_key: `pk_test_${suffix}` });
  return { ...co, processorKey: `sk_test_${suffix}` };
}

/**
 * A test body run with these settings in place of the environment's, for what it starts and
 * nothing else (`withSettings`, lib/env.ts): `it('...', underSettings({ ADMIN_TOKEN: '...' }, async () => ...))`.
 */
export function underSettings<T>(values: Settings, fn: () => T): () => T {
  return () => withSettings(values, fn);
}
