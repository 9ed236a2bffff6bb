import { describe, expect, it, beforeAll } from 'vitest';
import { api, newCompany, useTestDatabase } from '../testing/harness';
import { dispatch } from '../testing/router';
import { withSettings } from '../env';

const t = useTestDatabase();

describe('the API contract', () => {
  let acme: Awaited<ReturnType<typeof newCompany>>;
  let other: Awaited<ReturnType<typeof newCompany>>;
  beforeAll(async () => {
    acme = await newCompany(t);
    other = await newCompany(t, { name: 'Other' });
  });

  it('answers /health without auth and names the database', async () => {
    const res = await api('GET', '/health');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: { status: 'ok', database: t.kind } });
    expect(res.headers.get('request-id')).toMatch(/^req_/);
  });

  it('refuses missing and wrong credentials with 401 and a Basic challenge', async () => {
    for (const auth of [null, { companyId: acme.company.id, apiKey: 'sk_wrong' }, { companyId: other.company.id, apiKey: acme.apiKey }]) {
      const res = await api('GET', '/v1/companies', { auth });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Basic realm="billing"');
      expect(res.body.error).toMatchObject({ type: 'unauthorized', param: null });
      expect(res.body.error.request_id).toBe(res.headers.get('request-id'));
    }
  });

  it("refuses another site's browser requests that would change something, even with good credentials", async () => {
    const keys = async () => (await acme.call('GET', '/v1/companies/{company}/api_keys')).body.data.length;
    const before = await keys();
    // What a form on another site sends: no body, a form content type, the browser's cached Basic credentials.
    for (const site of ['cross-site', 'same-site']) {
      const res = await api('POST', `/v1/companies/${acme.company.id}/api_keys`, {
        auth: acme.auth,
        headers: { 'sec-fetch-site': site, 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ type: 'invalid_request', param: null });
      expect(res.body.error.message).toContain('Sec-Fetch-Site');
    }
    expect(await keys()).toBe(before);
    // Reads, a same-origin page, and servers (no such header) are served.
    expect((await api('GET', '/v1/companies', { auth: acme.auth, headers: { 'sec-fetch-site': 'cross-site' } })).status).toBe(200);
    const own = await api('POST', `/v1/companies/${acme.company.id}/api_keys`, { auth: acme.auth, headers: { 'sec-fetch-site': 'same-origin' } });
    expect(own.status).toBe(200);
    const server = await api('POST', `/v1/companies/${acme.company.id}/api_keys`, { auth: acme.auth });
    expect(server.status).toBe(200);
    expect(await keys()).toBe(before + 2);
  });

  it('decodes path parameters once: an escaped percent sign is a bad denomination or an unknown id, never a 500', async () => {
    const acct = (await acme.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'P', email: 'p@x.io', processor_id: 'cus_p' } })).body.data.id;
    for (const denomination of ['a%2541', '%25']) {
      const res = await acme.call('POST', `/v1/accounts/${acct}/balance/${denomination}`);
      expect(res.status, denomination).toBe(400);
      expect(res.body.error.param).toBe('denomination');
    }
    expect((await acme.call('GET', `/v1/accounts/${acct}/balance/aA`)).status).toBe(404);
    expect((await acme.call('GET', '/v1/events/%25')).status).toBe(404);
    const spaced = await acme.call('POST', `/v1/accounts/${acct}/balance/storage-GB`);
    expect(spaced.body.data.denomination).toBe('storage-GB');
  });

  it('writes units a double cannot hold as exact JSON number literals', async () => {
    const acct = (await acme.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'X', email: 'x@x.io', processor_id: 'cus_x' } })).body.data.id;
    await acme.call('POST', `/v1/accounts/${acct}/balance/big`, { body: { amount: '1234567.123456789012' } });
    await acme.call('POST', `/v1/accounts/${acct}/events`, { body: { type: 't', cost_override_amount: '0.000000000002', cost_override_denomination: 'big' } });
    const auth = `Basic ${Buffer.from(`${acme.company.id}:${acme.apiKey}`).toString('base64')}`;
    const res = await dispatch(new Request(`http://localhost/v1/accounts/${acct}/balance/big`, { headers: { authorization: auth } }));
    const text = await res.text();
    expect(text).toContain('"amount":1234567.12345678901');
    expect(text).toContain('"available":1234567.12345678901,');
    expect(text).not.toContain('exact');
    const ledger = await (await dispatch(new Request(`http://localhost/v1/accounts/${acct}/transactions`, { headers: { authorization: auth } }))).text();
    expect(ledger).toContain('"starting_balance":1234567.123456789012');
    expect(ledger).toContain('"amount":-2e-12');
  });

  it('wraps success in data only (lists add has_more), and serves the same path without /v1', async () => {
    const a = await acme.call('GET', '/v1/companies');
    const b = await acme.call('GET', '/companies');
    expect(a.status).toBe(200);
    expect(Object.keys(a.body)).toEqual(['data', 'has_more']);
    expect(a.body.has_more).toBe(false);
    const key = await acme.call('POST', '/v1/companies/{company}/api_keys');
    expect(Object.keys(key.body)).toEqual(['data']);
    expect(a.body.data).toHaveLength(1);
    expect(a.body.data[0]).toMatchObject({ id: acme.company.id, name: 'Acme' });
    expect(JSON.stringify(a.body)).not.toMatch(/sk_|key_hash|processor_key_enc/);
    expect(b.body).toEqual(a.body);
  });

  it('rejects malformed JSON, non-JSON bodies and oversized bodies', async () => {
    const path = '/v1/companies/{company}/accounts';
    const bad = await acme.call('POST', path, { raw: '{"name": ', headers: { 'content-type': 'application/json' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.type).toBe('invalid_request');
    const text = await acme.call('POST', path, { raw: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(text.status).toBe(415);
    expect(text.body.error.type).toBe('unsupported_media_type');
    const big = await acme.call('POST', path, { body: { name: 'x', email: 'a@b.io', metadata: { blob: 'x'.repeat(1024 * 1024) } } });
    expect(big.status).toBe(413);
    expect(big.body.error.type).toBe('payload_too_large');
  });

  it('answers unknown routes with a JSON 404', async () => {
    const res = await acme.call('GET', '/v1/nothing/here');
    expect(res.status).toBe(404);
    expect(res.body.error.type).toBe('not_found');
  });

  it('paginates newest first with limit, starting_after and a Link header', async () => {
    const created: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await other.call('POST', '/v1/companies/{company}/accounts', { body: { name: `P${i}`, email: `p${i}@x.io` } });
      created.push(r.body.data.id);
    }
    const first = await other.call('GET', '/v1/companies/{company}/accounts?limit=2');
    expect(first.body.data.map((a: { id: string }) => a.id)).toEqual([created[4], created[3]]);
    expect(first.body.has_more).toBe(true);
    const link = first.headers.get('link');
    expect(link).toMatch(new RegExp(`starting_after=${created[3]}.*rel="next"`));
    const next = await other.call('GET', link!.slice(1, link!.indexOf('>')));
    expect(next.body.data.map((a: { id: string }) => a.id)).toEqual([created[2], created[1]]);
    expect(next.body.has_more).toBe(true);
    const last = await other.call('GET', `/v1/companies/{company}/accounts?limit=2&starting_after=${created[1]}`);
    expect(last.body.data.map((a: { id: string }) => a.id)).toEqual([created[0]]);
    expect(last.body.has_more).toBe(false);
    expect(last.headers.get('link')).toBeNull();
    // A page that ends exactly at the last item says so: no empty page follows.
    const exact = await other.call('GET', `/v1/companies/{company}/accounts?limit=3&starting_after=${created[3]}`);
    expect(exact.body.data.map((a: { id: string }) => a.id)).toEqual([created[2], created[1], created[0]]);
    expect(exact.body.has_more).toBe(false);
    expect(exact.headers.get('link')).toBeNull();
    for (const limit of ['0', '1001', 'x']) {
      const bad = await other.call('GET', `/v1/companies/{company}/accounts?limit=${limit}`);
      expect(bad.status).toBe(400);
      expect(bad.body.error.param).toBe('limit');
    }
  });

  it('replays a POST with the same Idempotency-Key and refuses a different body', async () => {
    const body = { name: 'Idem', email: 'idem@x.io' };
    const headers = { 'Idempotency-Key': 'k-1' };
    const a = await acme.call('POST', '/v1/companies/{company}/accounts', { body, headers });
    const b = await acme.call('POST', '/v1/companies/{company}/accounts', { body, headers: { 'X-DedupeId': 'k-1' } });
    expect(a.status).toBe(200);
    expect(b.body.data.id).toBe(a.body.data.id);
    expect(b.headers.get('idempotent-replayed')).toBe('true');
    const c = await acme.call('POST', '/v1/companies/{company}/accounts', { body: { ...body, name: 'Else' }, headers });
    expect(c.status).toBe(409);
    expect(c.body.error.type).toBe('conflict');
    const list = await acme.call('GET', '/v1/companies/{company}/accounts?email=idem@x.io');
    expect(list.body.data).toHaveLength(1);
  });

  it('answers 429 with Retry-After over the company request rate', async () => {
    const busy = await newCompany(t);
    await withSettings({ RATE_LIMIT_PER_SECOND: '1' }, async () => {
      const statuses: number[] = [];
      let limited: { status: number; body: any; headers: Headers } | undefined;
      for (let i = 0; i < 5; i++) {
        const r = await busy.call('GET', '/v1/companies');
        statuses.push(r.status);
        if (r.status === 429) limited = r;
      }
      expect(statuses.slice(0, 2)).toEqual([200, 200]);
      expect(limited?.body.error.type).toBe('rate_limited');
      expect(Number(limited?.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      // Other companies are not affected.
      expect((await acme.call('GET', '/v1/companies')).status).toBe(200);
    });
  });
});

