import { beforeAll, describe, expect, it } from 'vitest';
import { api, newCompany, useTestDatabase } from '../testing/harness';
import { listRoutes } from '../testing/router';

const t = useTestDatabase();

// Routes outside the company API: public pages and next-auth's own handler.
const PUBLIC = [/^\/health$/, /^\/collect\//, /^\/api\/auth\//, /^\/v1\/openapi\.json$/, /^\/v1\/\[\.\.\.rest\]$/];
const OPERATOR = [/^\/v1\/companies$/, /^\/v1\/test_clock/];

function concrete(path: string, companyId: string): string {
  return path.replace('[company_id]', companyId).replace(/\[(\w+)\]/g, (_m, name: string) => (name === 'denomination' ? 'credits' : name === 'topic' ? 'balance_change' : `x_${name}`));
}

describe('the error contract on every endpoint', () => {
  let co: Awaited<ReturnType<typeof newCompany>>;
  let routes: { path: string; methods: string[] }[];
  beforeAll(async () => {
    co = await newCompany(t);
    routes = (await listRoutes()).filter((r) => !PUBLIC.some((p) => p.test(r.path)));
  });

  it('covers a meaningful set of routes', () => {
    expect(routes.length).toBeGreaterThan(20);
  });

  it('answers 401 with the error shape without credentials, and with another key', async () => {
    for (const r of routes) {
      if (OPERATOR.some((p) => p.test(r.path)) && !r.methods.includes('GET')) continue;
      for (const method of r.methods) {
        if (OPERATOR.some((p) => p.test(r.path)) && method !== 'GET') continue;
        if (r.path.startsWith('/v1/test_clock')) continue;
        const path = concrete(r.path, co.company.id);
        for (const auth of [null, { companyId: co.company.id, apiKey: 'sk_not_a_key' }]) {
          const res = await api(method, path, { auth, body: method === 'GET' || method === 'DELETE' ? undefined : {} });
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

  it("answers 404, never 200 or 403, for ids that are not the caller's", async () => {
    const other = await newCompany(t);
    const acct = (await other.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'O', email: 'o@x.io' } })).body.data.id;
    for (const r of routes) {
      if (!r.path.includes('[account_id]') || !r.methods.includes('GET')) continue;
      const path = r.path.replace('[account_id]', acct).replace(/\[(\w+)\]/g, (_m, n: string) => (n === 'denomination' ? 'credits' : `x_${n}`));
      const res = await co.call('GET', path);
      expect(res.status, path).toBe(404);
      expect(res.body.error.type).toBe('not_found');
    }
    for (const r of routes) {
      if (!r.path.startsWith('/v1/companies/[company_id]') || !r.methods.includes('GET')) continue;
      const res = await co.call('GET', concrete(r.path, other.company.id));
      expect(res.status, r.path).toBe(404);
    }
  });
});
