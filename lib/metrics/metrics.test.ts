import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { api, newCompany, useTestDatabase } from '../testing/harness';
import { listRoutes } from '../testing/router';
import { captureLogs } from '../testing/log-capture';
import { charges } from '../db/schema';
import { newId } from '../ids';
import { enqueueJob } from '../jobs/queue';
import { registerJobHandler, runDueWork } from '../jobs/worker';
import { routePattern } from './requests';
import { sample } from '../testing/prometheus';
import { withSettings } from '../env';
import { query, openPostgres } from '../db/client';

const t = useTestDatabase();
const TOKEN = 'metrics-token-0123456789';

/** GET /metrics as a server with this METRICS_TOKEN answers it. */
const metricsCall = (token: string | undefined, authorization?: string) =>
  withSettings({ METRICS_TOKEN: token }, () => api('GET', '/metrics', { headers: authorization ? { authorization } : {} }));

async function scrape(): Promise<string> {
  const res = await metricsCall(TOKEN, `Bearer ${TOKEN}`);
  expect(res.status).toBe(200);
  return res.body as string;
}

describe('GET /metrics', () => {
  it('answers 404 while METRICS_TOKEN is unset, 401 without it or with another, and the text format with it', async () => {
    const off = await metricsCall(undefined, `Bearer ${TOKEN}`);
    expect(off.status).toBe(404);
    expect(off.body.error).toMatchObject({ type: 'not_found', request_id: off.headers.get('request-id') });

    for (const authorization of [undefined, 'Bearer wrong-token-0123456789', `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}`, `Bearer ${TOKEN}x`]) {
      const res = await metricsCall(TOKEN, authorization);
      expect(res.status, authorization).toBe(401);
      expect(res.body.error.type).toBe('unauthorized');
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
    }
    const ok = await metricsCall(TOKEN, `Bearer ${TOKEN}`);
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(ok.body).toMatch(/^# HELP billing_http_requests_total /m);
    expect(ok.body).toMatch(/^process_cpu_user_seconds_total /m);
    expect(ok.body).toMatch(/^nodejs_eventloop_lag_seconds /m);
    expect((await withSettings({ METRICS_TOKEN: TOKEN }, () => api('POST', '/metrics'))).status).toBe(404);

    expect((await metricsCall('short', 'Bearer short')).status).toBe(404);
  });
});

describe('requests', () => {
  it('name every route file by its pattern, with the /v1 prefix or without, never by its raw path', async () => {
    const values: Record<string, string> = { company_id: 'c_01abc', account_id: 'a_01abc', denomination: 'balance', topic: 'balance_change', key_id: 'key_1', rest: 'no/such/path' };
    let checked = 0;
    for (const r of await listRoutes()) {
      if (r.path.startsWith('/api/auth')) continue;
      const params: Record<string, string | string[]> = {};
      const concrete = r.path.replace(/\[(\.\.\.)?(\w+)\]/g, (_m, rest: string | undefined, name: string) => {
        const v = values[name] ?? `x_${name}%20`;
        params[name] = rest ? v.split('/') : decodeURIComponent(v);
        return v;
      });
      const template = r.path.replace(/\[(?:\.\.\.)?(\w+)\]/g, '{$1}');
      expect(routePattern(concrete, params), r.path).toBe(template);
      if (r.path.startsWith('/v1/') && r.path !== '/v1/[...rest]') {
        expect(routePattern(concrete.slice(3), params), `${r.path} without /v1`).toBe(template);
      }
      checked++;
    }
    expect(checked).toBeGreaterThan(40);
  });

  it('write one access log line per request and count it by route pattern and status', async () => {
    const co = await newCompany(t);
    const before = await scrape();
    const cap = captureLogs();
    let acct: string;
    let missing: Awaited<ReturnType<typeof api>>;
    try {
      acct = (await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'A', email: 'a@x.io' } })).body.data.id;
      await co.call('GET', `/accounts/${acct}`);
      await co.call('GET', `/v1/accounts/${acct}`);
      missing = await api('GET', '/v1/accounts/a_nope', { auth: { companyId: co.company.id, apiKey: 'sk_wrong' } });
      await api('GET', '/livez');
    } finally {
      cap.stop();
    }
    const access = cap.lines.filter((l) => 'route' in l);
    expect(access.map((l) => [l.level, l.method, l.route, l.status])).toEqual([
      ['info', 'POST', '/v1/companies/{company_id}/accounts', 200],
      ['info', 'GET', '/v1/accounts/{account_id}', 200],
      ['info', 'GET', '/v1/accounts/{account_id}', 200],
      ['info', 'GET', '/v1/accounts/{account_id}', 401],
      ['debug', 'GET', '/livez', 200],
    ]);
    expect(access[0]).toMatchObject({ company_id: co.company.id, msg: 'POST /v1/companies/{company_id}/accounts 200' });
    expect(access[0].request_id).toMatch(/^req_/);
    expect(typeof access[0].duration_ms).toBe('number');
    // An unauthenticated caller's company is not taken from its claim.
    expect(access[3]).toMatchObject({ company_id: null, request_id: missing!.headers.get('request-id') });
    expect(JSON.stringify(access)).not.toContain(acct!);

    const after = await scrape();
    const labels = { method: 'GET', route: '/v1/accounts/{account_id}', status: '200' };
    expect((sample(after, 'billing_http_requests_total', labels) ?? 0) - (sample(before, 'billing_http_requests_total', labels) ?? 0)).toBe(2);
    expect((sample(after, 'billing_http_request_duration_seconds_count', labels) ?? 0) - (sample(before, 'billing_http_request_duration_seconds_count', labels) ?? 0)).toBe(2);
    const refused = { method: 'GET', route: '/v1/accounts/{account_id}', status: '401' };
    expect((sample(after, 'billing_http_requests_total', refused) ?? 0) - (sample(before, 'billing_http_requests_total', refused) ?? 0)).toBe(1);
    expect(after).not.toContain(acct!);
  });
});

describe('events', () => {
  it('are counted where the event routes answer: recorded, refused with 402, and the size of each batch', async () => {
    const co = await newCompany(t);
    const acct = (await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'A', email: 'a@x.io' } })).body.data.id;
    await co.call('POST', `/v1/accounts/${acct}/balance/credits`, { body: { amount: 2 } });
    const before = await scrape();
    const gated = (amount: number) => ({ type: 'q', cost_override_amount: amount, cost_override_denomination: 'credits', gate_on_balance: true });
    expect((await co.call('POST', `/v1/accounts/${acct}/events`, { body: gated(1) })).status).toBe(200);
    expect((await co.call('POST', `/v1/accounts/${acct}/events`, { body: gated(5) })).status).toBe(402);
    const batch = await co.call('POST', '/v1/events', { body: [{ ...gated(1), account_id: acct }, { ...gated(5), account_id: acct }, { type: 'ping', account_id: acct }] });
    expect(batch.body.data.map((e: { state: string }) => e.state)).toEqual(['complete', 'rejected', 'complete']);
    // A refused call (404) records nothing and counts nothing.
    expect((await co.call('POST', '/v1/accounts/a_nope/events', { body: gated(1) })).status).toBe(404);
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}) => (sample(after, name, labels) ?? 0) - (sample(before, name, labels) ?? 0);
    expect(delta('billing_events_total', { call: 'single', outcome: 'recorded' })).toBe(1);
    expect(delta('billing_events_total', { call: 'single', outcome: 'refused' })).toBe(1);
    expect(delta('billing_events_total', { call: 'batch', outcome: 'recorded' })).toBe(2);
    expect(delta('billing_events_total', { call: 'batch', outcome: 'refused' })).toBe(1);
    expect(delta('billing_event_batch_size_count')).toBe(1);
    expect(delta('billing_event_batch_size_sum')).toBe(3);
  });
});

describe('the gauges read from the database', () => {
  let co: Awaited<ReturnType<typeof newCompany>>;
  beforeAll(async () => {
    co = await newCompany(t);
  });

  it('show the webhook backlog and its oldest delivery, pending charges and the oldest, each task’s lag, and the pool', async () => {
    const { db } = t.database;
    // Nothing of this file's earlier tests waits for the worker: every gauge starts at zero.
    const idle = await scrape();
    for (const state of ['due', 'scheduled', 'sending']) expect(sample(idle, 'billing_webhook_backlog', { state }), state).toBe(0);
    expect(sample(idle, 'billing_webhook_oldest_waiting_seconds')).toBe(0);
    expect(sample(idle, 'billing_charges_pending')).toBe(0);
    const TASKS = ['jobs', 'expire-holds', 'reconcile-charges', 'plan-renewals', 'monthly-refills', 'webhook-deliveries'];
    for (const task of TASKS) expect(sample(idle, 'billing_worker_lag_seconds', { task }), task).toBe(0);

    // Work for every task, each due a known time ago (the gauges read the clock: real time here).
    const start = Date.now();
    const ago = (seconds: number) => new Date(start - seconds * 1000);
    const plan = (await co.call('POST', '/v1/companies/{company}/plans', { body: { name: 'Free', charge_amount: 0, balances: [{ amount: 10, denomination: 'credits' }] } })).body.data.id;
    const acct = (await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'A', email: 'a@x.io', plan_id: plan } })).body.data.id;
    const hook = (await co.call('POST', '/v1/companies/{company}/webhooks', { body: { url: 'http://127.0.0.1:9/hook' } })).body.data.id;
    await co.call('POST', `/v1/companies/{company}/webhooks/${hook}/subscribe/balance_change`);
    const hold = await co.call('POST', `/v1/accounts/${acct}/events`, { body: { type: 'q', cost_override_amount: 1, cost_override_denomination: 'credits', state: 'pending' } });
    expect(hold.status).toBe(200);
    // Balance changes of three balances: a delivery each.
    for (const name of ['B', 'C', 'D']) {
      const other = (await co.call('POST', '/v1/companies/{company}/accounts', { body: { name, email: `${name}@x.io` } })).body.data.id;
      expect((await co.call('POST', `/v1/accounts/${other}/balance/credits`, { body: { amount: 5 } })).status).toBe(200);
    }
    const waiting = (await co.call('GET', `/v1/companies/{company}/webhooks/${hook}/deliveries`)).body.data as { id: string; status: string }[];
    expect(waiting.length).toBeGreaterThanOrEqual(3);
    expect(waiting.every((d) => d.status === 'pending')).toBe(true);
    const [retrying, ...due] = waiting.map((d) => d.id);
    // One delivery waits two hours for a retry an hour from now; the others have been due for 5 minutes.
    await query(db, sql`update webhook_deliveries set created_at = ${ago(7200).toISOString()}::timestamptz, next_attempt_at = ${ago(-3600).toISOString()}::timestamptz where id = ${retrying}`);
    await query(db, sql`update webhook_deliveries set next_attempt_at = ${ago(300).toISOString()}::timestamptz where id <> ${retrying} and webhook_id = ${hook}`);
    await query(db, sql`update events set expires_at = ${ago(600).toISOString()}::timestamptz where id = ${hold.body.data.id}`);
    await query(db, sql`update accounts set next_plan_renewal = ${ago(900).toISOString()}::timestamptz where id = ${acct}`);
    await query(db, sql`update balances set next_periodic_refill = ${ago(1200).toISOString()}::timestamptz where account_id = ${acct}`);
    await db.insert(charges).values({
      id: newId('ch'), companyId: co.company.id, accountId: acct, amount: 500, reason: 'refill_monthly', description: 'x', status: 'pending', metadata: { effects: [] }, createdAt: ago(3600), updatedAt: ago(3600),
    });
    await enqueueJob(db, { kind: 'metrics_probe', payload: {}, runAt: ago(700) }, ago(700));

    const text = await scrape();
    const within = (value: number | undefined, seconds: number) => {
      expect(value).toBeGreaterThanOrEqual(seconds);
      // The scrape came after `start`: by as long as the calls in between took, never by minutes.
      expect(value).toBeLessThan(seconds + 120);
    };
    expect(sample(text, 'billing_webhook_backlog', { state: 'due' })).toBe(due.length);
    expect(sample(text, 'billing_webhook_backlog', { state: 'scheduled' })).toBe(1);
    expect(sample(text, 'billing_webhook_backlog', { state: 'sending' })).toBe(0);
    within(sample(text, 'billing_webhook_oldest_waiting_seconds'), 7200);
    expect(sample(text, 'billing_charges_pending')).toBe(1);
    within(sample(text, 'billing_charge_oldest_pending_seconds'), 3600);
    // Each task's oldest due work: a pending charge is first looked at a minute after it was made.
    const lags: Record<string, number> = { jobs: 700, 'expire-holds': 600, 'reconcile-charges': 3540, 'plan-renewals': 900, 'monthly-refills': 1200, 'webhook-deliveries': 300 };
    for (const task of TASKS) within(sample(text, 'billing_worker_lag_seconds', { task }), lags[task]);
    expect(sample(text, 'billing_db_pool_max')).toBe(t.kind === 'postgres' ? 20 : 1);
    if (t.kind === 'postgres') {
      // PostgreSQL's own count of the connections to this database, other than the scrape's:
      // one more held open idle, and one more busy for as long as the scrape takes.
      const other = await openPostgres(t.url!, { max: 2, migrate: false });
      try {
        const before = await scrape();
        const connections = (text: string, state: string) => sample(text, 'billing_db_connections', { state }) ?? -1;
        await query(other.db, sql`select 1`);
        const busy = query(other.db, sql`select pg_sleep(3)`);
        let during = await scrape();
        for (let i = 0; i < 20 && connections(during, 'active') === connections(before, 'active'); i++) during = await scrape();
        expect(connections(during, 'active')).toBe(connections(before, 'active') + 1);
        expect(connections(during, 'idle') + connections(during, 'active')).toBeGreaterThanOrEqual(connections(before, 'idle') + connections(before, 'active') + 1);
        await busy;
        const after = await scrape();
        expect(connections(after, 'active')).toBe(connections(before, 'active'));
        expect(connections(after, 'idle')).toBeGreaterThanOrEqual(1);
      } finally {
        await other.close();
      }
    } else {
      expect(sample(text, 'billing_db_connections', { state: 'idle' })).toBeUndefined();
    }

    // The worker runs the job: the lag is gone, and the run is logged and counted.
    registerJobHandler('metrics_probe', async () => {});
    const cap = captureLogs();
    try {
      await runDueWork(t.database.db, new Date());
    } finally {
      cap.stop();
    }
    const run = cap.lines.find((l) => l.task === 'jobs' && (l.items as number) > 0);
    expect(run).toMatchObject({ level: 'info', items: 1, duration_ms: expect.any(Number), msg: 'worker task jobs: 1 handled' });
    const later = await scrape();
    const jobs = { task: 'jobs' };
    const delta = (name: string, labels: Record<string, string> = jobs) => (sample(later, name, labels) ?? 0) - (sample(text, name, labels) ?? 0);
    expect(sample(later, 'billing_worker_lag_seconds', jobs)).toBe(0);
    // Every run is logged (debug when it found nothing), counted and timed; its items add up.
    const runs = cap.lines.filter((l) => l.task === 'jobs');
    expect(runs.length).toBeGreaterThanOrEqual(2);
    expect(delta('billing_worker_task_runs_total', { task: 'jobs', outcome: 'ok' })).toBe(runs.length);
    expect(delta('billing_worker_task_duration_seconds_count')).toBe(runs.length);
    expect(delta('billing_worker_task_items_total')).toBe(runs.reduce((n, l) => n + (l.items as number), 0));
  });
});
