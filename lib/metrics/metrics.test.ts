import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, newCompany, useTestDatabase } from '../testing/harness';
import { listRoutes } from '../testing/router';
import { captureLogs } from '../testing/log-capture';
import { charges } from '../db/schema';
import { newId } from '../ids';
import { enqueueJob } from '../jobs/queue';
import { registerJobHandler, runDueWork } from '../jobs/worker';
import { routePattern } from './requests';
import { sample } from '../testing/prometheus';

const t = useTestDatabase();
const TOKEN = 'metrics-token-0123456789';

async function scrape(): Promise<string> {
  const res = await api('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status).toBe(200);
  return res.body as string;
}

describe('GET /metrics', () => {
  const saved = process.env.METRICS_TOKEN;
  afterAll(() => {
    if (saved === undefined) delete process.env.METRICS_TOKEN;
    else process.env.METRICS_TOKEN = saved;
  });

  it('answers 404 while METRICS_TOKEN is unset, 401 without it or with another, and the text format with it', async () => {
    delete process.env.METRICS_TOKEN;
    const off = await api('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(off.status).toBe(404);
    expect(off.body.error).toMatchObject({ type: 'not_found', request_id: off.headers.get('request-id') });

    process.env.METRICS_TOKEN = TOKEN;
    for (const authorization of [undefined, 'Bearer wrong-token-0123456789', `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}`, `Bearer ${TOKEN}x`]) {
      const res = await api('GET', '/metrics', { headers: authorization ? { authorization } : {} });
      expect(res.status, authorization).toBe(401);
      expect(res.body.error.type).toBe('unauthorized');
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
    }
    const ok = await api('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(ok.body).toMatch(/^# HELP billing_http_requests_total /m);
    expect(ok.body).toMatch(/^process_cpu_user_seconds_total /m);
    expect(ok.body).toMatch(/^nodejs_eventloop_lag_seconds /m);
    expect((await api('POST', '/metrics')).status).toBe(404);

    process.env.METRICS_TOKEN = 'short';
    expect((await api('GET', '/metrics', { headers: { authorization: 'Bearer short' } })).status).toBe(404);
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
    process.env.METRICS_TOKEN = TOKEN;
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
    expect(sample(after, 'billing_http_requests_total', { route: '/v1/accounts/{account_id}', status: '401' })).toBeGreaterThanOrEqual(1);
    expect(after).not.toContain(acct!);
  });
});

describe('events', () => {
  it('are counted where the event routes answer: recorded, refused with 402, and the size of each batch', async () => {
    process.env.METRICS_TOKEN = TOKEN;
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
    process.env.METRICS_TOKEN = TOKEN;
    co = await newCompany(t);
  });

  it('show the webhook backlog and its oldest delivery, pending charges and the oldest, each task’s lag, and the pool', async () => {
    const acct = (await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'A', email: 'a@x.io' } })).body.data.id;
    const hook = (await co.call('POST', '/v1/companies/{company}/webhooks', { body: { url: 'http://127.0.0.1:9/hook' } })).body.data.id;
    await co.call('POST', `/v1/companies/{company}/webhooks/${hook}/subscribe/balance_change`);
    await co.call('POST', `/v1/accounts/${acct}/balance/credits`, { body: { amount: 5 } });
    await co.call('POST', `/v1/accounts/${acct}/events`, { body: { type: 'q', cost_override_amount: 1, cost_override_denomination: 'credits', state: 'pending' } });
    expect((await co.call('GET', `/v1/companies/{company}/webhooks/${hook}/deliveries`)).body.data[0]?.status).toBe('pending');
    const hourAgo = new Date(Date.now() - 3600_000);
    await t.database.db.insert(charges).values({
      id: newId('ch'), companyId: co.company.id, accountId: acct, amount: 500, reason: 'refill_monthly', description: 'x', status: 'pending', metadata: { effects: [] }, createdAt: hourAgo, updatedAt: hourAgo,
    });
    await enqueueJob(t.database.db, { kind: 'metrics_probe', payload: {}, runAt: new Date(Date.now() - 600_000) }, new Date(Date.now() - 600_000));

    const text = await scrape();
    expect(sample(text, 'billing_webhook_backlog', { state: 'due' })).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'billing_webhook_backlog', { state: 'scheduled' })).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'billing_webhook_backlog', { state: 'sending' })).toBe(0);
    expect(sample(text, 'billing_webhook_oldest_waiting_seconds')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'billing_charges_pending')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'billing_charge_oldest_pending_seconds')).toBeGreaterThanOrEqual(3590);
    expect(sample(text, 'billing_worker_lag_seconds', { task: 'jobs' })).toBeGreaterThanOrEqual(590);
    for (const task of ['expire-holds', 'reconcile-charges', 'plan-renewals', 'monthly-refills', 'webhook-deliveries']) {
      expect(sample(text, 'billing_worker_lag_seconds', { task }), task).toBeGreaterThanOrEqual(0);
    }
    expect(sample(text, 'billing_db_pool_max')).toBe(t.kind === 'postgres' ? 20 : 1);
    if (t.kind === 'postgres') {
      expect(sample(text, 'billing_db_connections', { state: 'idle' })).toBeGreaterThanOrEqual(0);
      expect(sample(text, 'billing_db_connections', { state: 'active' })).toBeGreaterThanOrEqual(0);
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
    expect(run).toMatchObject({ level: 'info', items: expect.any(Number), duration_ms: expect.any(Number), msg: expect.stringMatching(/^worker task jobs: \d+ handled$/) });
    const later = await scrape();
    expect(sample(later, 'billing_worker_lag_seconds', { task: 'jobs' })).toBe(0);
    expect(sample(later, 'billing_worker_task_runs_total', { task: 'jobs', outcome: 'ok' })).toBeGreaterThanOrEqual(1);
    expect(sample(later, 'billing_worker_task_items_total', { task: 'jobs' })).toBeGreaterThanOrEqual(1);
    expect(sample(later, 'billing_worker_task_duration_seconds_count', { task: 'jobs' })).toBeGreaterThanOrEqual(1);
  });
});
