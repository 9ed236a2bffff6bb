import { describe, expect, it } from 'vitest';
import { withSettings } from '../env';
import { api, newCompany, underSettings, useTestDatabase } from '../testing/harness';
import { holdCompanySlot, resetAddressRateLimits } from './rate-limit';

const t = useTestDatabase();

describe('wrong API credentials per client address', () => {
  it('answers 429 with Retry-After once an address has spent its budget, before any key lookup, and spares other addresses', underSettings({ AUTH_FAILURES_PER_MINUTE: '5' }, async () => {
    resetAddressRateLimits();
    const co = await newCompany(t);
    const from = (address: string, apiKey = 'sk_wrong') => api('GET', '/v1/companies', { auth: { companyId: co.company.id, apiKey }, headers: { 'x-forwarded-for': address } });
    for (let i = 0; i < 5; i++) expect((await from('203.0.113.7')).status).toBe(401);
    const refused = await from('203.0.113.7');
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refused.body.error).toMatchObject({ type: 'rate_limited', param: null, request_id: expect.stringMatching(/^req_/) });
    expect(refused.body.error.message).toMatch(/wrong credentials/);
    // The right key from that address waits too: the address is refused before its key is looked up.
    expect((await from('203.0.113.7', co.apiKey)).status).toBe(429);
    // Another address, right key or wrong, is answered as before.
    expect((await from('203.0.113.8', co.apiKey)).status).toBe(200);
    expect((await from('203.0.113.8')).status).toBe(401);
    // Right keys spend nothing.
    for (let i = 0; i < 10; i++) expect((await from('203.0.113.9', co.apiKey)).status).toBe(200);
    // IPv6: a /64 is one address, and each /48 has 8 times the budget, so the /64s of one site are not each a fresh one.
    // At 1 a minute the /48's 8 come back one each 7.5 s, more than a slow machine takes for these requests
    // (at 5, one each 1.5 s, fewer than the 40 requests it takes to spend them).
    await withSettings({ AUTH_FAILURES_PER_MINUTE: '1' }, async () => {
      for (let n = 0; n < 8; n++) expect((await from(`2001:db8:7:${n}::1`)).status).toBe(401);
      expect((await from('2001:db8:7:8::1')).status).toBe(429);
      expect((await from('2001:db8:8::1')).status).toBe(401);
    });
  }));

  it('AUTH_FAILURES_PER_MINUTE=0 turns it off', underSettings({ AUTH_FAILURES_PER_MINUTE: '0' }, async () => {
    resetAddressRateLimits();
    const co = await newCompany(t);
    for (let i = 0; i < 70; i++) expect((await api('GET', '/v1/companies', { auth: { companyId: co.company.id, apiKey: 'sk_wrong' }, headers: { 'x-forwarded-for': '203.0.113.10' } })).status).toBe(401);
  }));
});

describe('requests of one company in flight', () => {
  it('past COMPANY_CONCURRENCY answers 429 with Retry-After: 1, for that company only, and frees the slot with each answer', underSettings({ COMPANY_CONCURRENCY: '3' }, async () => {
    const co = await newCompany(t);
    const other = await newCompany(t);
    // Three requests of the company still running.
    const running = [holdCompanySlot(co.company.id), holdCompanySlot(co.company.id), holdCompanySlot(co.company.id)];
    const refused = await co.call('GET', '/v1/companies');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.body.error).toMatchObject({ type: 'rate_limited', param: null, request_id: expect.stringMatching(/^req_/) });
    expect(refused.body.error.message).toMatch(/at most 3 in flight/);
    expect((await other.call('GET', '/v1/companies')).status).toBe(200);
    running[0]();
    running[0](); // given back once only
    expect((await co.call('GET', '/v1/companies')).status).toBe(200);
    // Answers, refusals included, give their slot back: the one free slot serves request after request.
    for (let i = 0; i < 5; i++) expect((await co.call('GET', '/v1/companies/{company}/accounts')).status).toBe(200);
    expect((await co.call('GET', '/v1/accounts/a_missing')).status).toBe(404);
    expect((await co.call('GET', '/v1/companies')).status).toBe(200);
    running[1]();
    running[2]();
  }));
});
