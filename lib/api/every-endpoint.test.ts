import { beforeAll, describe, expect, it } from 'vitest';
import { api, newCompany, useTestDatabase } from '../testing/harness';
import { listRoutes } from '../testing/router';
import { OPERATIONS } from './openapi/operations';

const t = useTestDatabase();

// Routes outside the company API: public pages, next-auth's own handler, /metrics (its own
// token; lib/metrics/metrics.test.ts) and the console's CSV downloads (a signed-in admin's
// session; lib/console/exports.test.ts).
const PUBLIC = [/^\/(health|livez|readyz|metrics)$/, /^\/collect\//, /^\/portal\//, /^\/console\//, /^\/api\/auth\//, /^\/v1\/openapi\.json$/, /^\/v1\/\[\.\.\.rest\]$/];
const OPERATOR = [/^\/v1\/companies$/, /^\/v1\/test_clock/];

function concrete(path: string, companyId: string): string {
  return path.replace('[company_id]', companyId).replace(/\[(\w+)\]/g, (_m, name: string) => (name === 'denomination' ? 'credits' : name === 'topic' ? 'balance_change' : `x_${name}`));
}

describe('the error contract on every endpoint', () => {
  let co: Awaited<ReturnType<typeof newCompany>>;
  let routes: { path: string; methods: string[] }[];
  let everyRoute: { path: string; methods: string[] }[];
  beforeAll(async () => {
    co = await newCompany(t);
    everyRoute = await listRoutes();
    routes = everyRoute.filter((r) => !PUBLIC.some((p) => p.test(r.path)));
  });

  it('covers a meaningful set of routes', () => {
    expect(routes.length).toBeGreaterThan(20);
  });

  it('answers 401 with the error shape without credentials, and with another key', async () => {
    let sent = 0;
    for (const r of routes) {
      if (OPERATOR.some((p) => p.test(r.path)) && !r.methods.includes('GET')) continue;
      for (const method of r.methods) {
        if (OPERATOR.some((p) => p.test(r.path)) && method !== 'GET') continue;
        if (r.path.startsWith('/v1/test_clock')) continue;
        const path = concrete(r.path, co.company.id);
        for (const auth of [null, { companyId: co.company.id, apiKey: 'sk_not_a_key' }]) {
          // From an address of its own each: past its budget of wrong credentials one address would get 429 (auth-limit.test.ts).
          const address = `10.0.${(++sent >> 8) & 255}.${sent & 255}`;
          const res = await api(method, path, { auth, body: method === 'GET' || method === 'DELETE' ? undefined : {}, headers: { 'x-forwarded-for': address } });
          expect(res.status, `${method} ${path}`).toBe(401);
          expect(Object.keys(res.body.error).sort(), `${method} ${path}`).toEqual(['message', 'param', 'request_id', 'type']);
          expect(res.headers.get('request-id')).toBe(res.body.error.request_id);
        }
      }
    }
  });

  it('refuses malformed JSON (400), non-JSON bodies (415) and bodies over 1 MiB (413) wherever a body is read', async () => {
    for (const r of routes) {
      if (OPERATOR.some((p) => p.test(r.path))) continue;
      for (const method of r.methods.filter((m) => m !== 'GET' && m !== 'DELETE')) {
        const path = concrete(r.path, co.company.id);
        const bad = await co.call(method, path, { raw: '{"oops": ', headers: { 'content-type': 'application/json' } });
        expect(bad.status, `${method} ${path}`).toBe(400);
        expect(bad.body.error.type).toBe('invalid_request');
        const form = await co.call(method, path, { raw: 'a=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
        expect(form.status, `${method} ${path}`).toBe(415);
        const big = await co.call(method, path, { raw: JSON.stringify({ pad: 'x'.repeat(1024 * 1024 + 1) }), headers: { 'content-type': 'application/json' } });
        expect(big.status, `${method} ${path}`).toBe(413);
      }
    }
  });

  it("answers 404, never 200 or 403, for another company's ids, on every documented operation with its example body", async () => {
    const other = await newCompany(t);
    const acct = (await other.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'O', email: 'o@x.io' } })).body.data.id;
    await other.call('POST', `/v1/accounts/${acct}/balance/credits`, { body: { amount: 5 } });
    const plan = (await other.call('POST', '/v1/companies/{company}/plans', { body: { name: 'Free', charge_amount: 0, balances: [{ amount: 1, denomination: 'credits' }] } })).body.data.id;
    const hook = (await other.call('POST', '/v1/companies/{company}/webhooks', { body: { url: 'http://127.0.0.1:9/hook' } })).body.data.id;
    await other.call('POST', `/v1/companies/{company}/webhooks/${hook}/subscribe/balance_change`);
    const event = (await other.call('POST', `/v1/accounts/${acct}/events`, { body: { type: 'x', cost_override_amount: 1, cost_override_denomination: 'credits', state: 'pending' } })).body.data.id;
    const delivery = (await other.call('GET', `/v1/companies/{company}/webhooks/${hook}/deliveries`)).body.data[0]?.id;
    expect(delivery).toMatch(/^whd_/);
    const key = (await other.call('POST', '/v1/companies/{company}/api_keys')).body.data.id;
    const ids: Record<string, string> = { account_id: acct, plan_id: plan, webhook_id: hook, event_id: event, delivery_id: delivery, key_id: key, denomination: 'credits', topic: 'balance_change' };

    let checked = 0;
    for (const op of OPERATIONS) {
      if (op.auth !== 'company' || !/\{(?!denomination|topic)\w+\}/.test(op.path)) continue;
      // Company paths are tried with the other company's id, and with the caller's own id around the other's resource.
      const variants = op.path.includes('{company_id}') ? [other.company.id, co.company.id] : [null];
      for (const companyId of variants) {
        if (companyId === co.company.id && !/\{company_id\}\/\w+\/\{/.test(op.path)) continue;
        const path = op.path.replace('{company_id}', companyId ?? '').replace(/\{(\w+)\}/g, (_m, n: string) => ids[n]);
        const res = await co.call(op.method.toUpperCase(), path, op.body ? { body: op.body.example } : {});
        expect(res.status, `${op.method} ${path}`).toBe(404);
        expect(res.body.error.type).toBe('not_found');
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(30);
    // Nothing of the other company moved.
    const balance = (await other.call('GET', `/v1/accounts/${acct}/balance/credits`)).body.data;
    expect([balance.amount, balance.pending]).toEqual([5, 1]);
    expect((await other.call('GET', `/v1/events/${event}`)).body.data.state).toBe('pending');
    expect((await other.call('GET', `/v1/companies/{company}/webhooks/${hook}`)).status).toBe(200);
    expect((await other.call('GET', `/v1/accounts/${acct}`)).body.data.name).toBe('O');
    expect((await api('GET', '/v1/companies', { auth: { companyId: other.company.id, apiKey: other.apiKey } })).status).toBe(200);
  });

  it('answers a method a path does not support in the error shape, with the methods it does, on every route file', async () => {
    // next-auth answers its own methods; any other /v1 path is the catch-all's 404.
    const declared = everyRoute.filter((r) => !/^\/api\/auth\/|^\/v1\/\[\.\.\.rest\]$/.test(r.path));
    expect(declared.map((r) => r.path)).toEqual(expect.arrayContaining(['/health', '/metrics', '/collect/[token]/submit', '/console/events/export']));
    let checked = 0;
    for (const r of declared) {
      expect(r.methods.length, r.path).toBeGreaterThan(0);
      for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter((m) => !r.methods.includes(m))) {
        const path = concrete(r.path, co.company.id);
        const res = await co.call(method, path);
        expect(res.status, `${method} ${path}`).toBe(404);
        expect(Object.keys(res.body.error).sort()).toEqual(['message', 'param', 'request_id', 'type']);
        expect(res.headers.get('request-id')).toBe(res.body.error.request_id);
        expect(res.headers.get('allow')).toBe([...r.methods, 'OPTIONS'].join(', '));
        checked++;
      }
      const options = await co.call('OPTIONS', concrete(r.path, co.company.id));
      expect(options.status, `OPTIONS ${r.path}`).toBe(204);
      expect(options.headers.get('allow'), r.path).toBe([...r.methods, 'OPTIONS'].join(', '));
      expect(options.headers.get('request-id'), r.path).toMatch(/^req_/);
    }
    expect(checked).toBeGreaterThan(100);
    const unknown = await co.call('OPTIONS', '/v1/no_such_route');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.request_id).toBe(unknown.headers.get('request-id'));
  });
});
