import { describe, expect, it } from 'vitest';
import { api, newPayingCompany, useLocalStripe, useTestDatabase } from '../testing/harness';
import { dispatch } from '../testing/router';

// Calls anyone may make, without credentials: the card collector's submit, the customer portal's
// card call and next-auth's routes.
const t = useTestDatabase();
useLocalStripe();

let addresses = 0;
/** Each scenario calls from an address of its own, so the per-address limit does not mix them up. */
const newAddress = () => `192.0.2.${++addresses}`;

const submit = (path: string, token: string, address: string) => api('POST', `${path}/submit`, { body: { token }, headers: { 'x-forwarded-for': address } });

describe('public submits', () => {
  it('are limited to 10 a minute per client address (429 rate_limited with Retry-After), per address', async () => {
    const from = newAddress();
    const path = '/collect/not-a-link';
    for (let i = 0; i < 10; i++) {
      const r = await submit(path, 'tok_visa', from);
      expect(r.status).toBe(404);
      expect(r.body.error.type).toBe('not_found');
    }
    const limited = await submit(path, 'tok_visa', from);
    expect(limited.status).toBe(429);
    expect(limited.body.error.type).toBe('rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // Entries a client writes in front of the proxy's own do not make it someone else.
    expect((await submit(path, 'tok_visa', `203.0.113.9, ${from}`)).status).toBe(429);
    expect((await submit(path, 'tok_visa', newAddress())).status).toBe(404);
  });

  it("include the customer portal's card call: limited per address, bodies over 64 KiB refused", async () => {
    const from = newAddress();
    const card = (address: string, body: unknown = { token: 'tok_visa' }) => api('POST', '/portal/not-a-link/card', { body, headers: { 'x-forwarded-for': address } });
    for (let i = 0; i < 10; i++) expect((await card(from)).status).toBe(404);
    const limited = await card(from);
    expect(limited.status).toBe(429);
    expect(limited.body.error.type).toBe('rate_limited');
    const big = await card(newAddress(), { token: 'tok_visa', pad: 'x'.repeat(100 * 1024) });
    expect(big.status).toBe(413);
    expect(big.body.error).toMatchObject({ type: 'payload_too_large', message: 'Request bodies are limited to 64 KiB.' });
  });

  it('refuse bodies over 64 KiB (413), declared or streamed without a length, before reading them whole', async () => {
    const co = await newPayingCompany(t);
    const created = await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Ada', email: 'ada@x.io', enable_card_collector: true } });
    const url = `${created.body.data.card_collector_url.replace(/^https?:\/\/[^/]+/, 'http://localhost')}/submit`;
    const headers = { 'content-type': 'application/json', 'x-forwarded-for': newAddress() };
    // Under the company API's 1 MiB, over the public 64 KiB.
    const declared = await dispatch(new Request(url, { method: 'POST', headers, body: JSON.stringify({ token: 'tok_visa', pad: 'x'.repeat(200 * 1024) }) }));
    expect(declared.status).toBe(413);
    expect((await declared.json()).error).toMatchObject({ type: 'payload_too_large', message: 'Request bodies are limited to 64 KiB.' });

    const stream = endlessBody();
    const chunked = await dispatch(new Request(url, { method: 'POST', headers: { ...headers, 'x-forwarded-for': newAddress() }, body: stream.body, duplex: 'half' } as RequestInit));
    expect(chunked.status).toBe(413);
    expect(stream.pulled()).toBeLessThanOrEqual(64 * 1024 + 16 * 1024);
    expect(stream.cancelled()).toBe(true);
    const account = await co.call('GET', `/v1/accounts/${created.body.data.id}`);
    expect(account.body.data.payment_method).toBeNull();

    const small = await dispatch(new Request(url, { method: 'POST', headers: { ...headers, 'x-forwarded-for': newAddress() }, body: JSON.stringify({ token: 'tok_visa' }) }));
    expect(small.status, await small.clone().text()).toBe(200);
    expect((await co.call('GET', `/v1/accounts/${created.body.data.id}`)).body.data.payment_method).toMatchObject({ brand: 'visa' });
  });
});

describe('next-auth routes', () => {
  it('refuse bodies over 64 KiB (413) before next-auth reads them, declared or streamed without a length', async () => {
    const url = 'http://localhost/api/auth/callback/credentials';
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const declared = await dispatch(new Request(url, { method: 'POST', headers: form, body: `email=a%40b.io&password=${'x'.repeat(8 * 1024 * 1024)}` }));
    expect(declared.status).toBe(413);
    expect((await declared.json()).error.type).toBe('payload_too_large');
    const stream = endlessBody();
    const chunked = await dispatch(new Request(url, { method: 'POST', headers: form, body: stream.body, duplex: 'half' } as RequestInit));
    expect(chunked.status).toBe(413);
    expect(stream.pulled()).toBeLessThanOrEqual(64 * 1024 + 16 * 1024);
  });
});

/** A request body without a length that would go on for 8 MiB, counting what was read of it. */
function endlessBody() {
  let pulled = 0;
  let cancelled = false;
  const chunk = new TextEncoder().encode('x'.repeat(16 * 1024));
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulled >= 8 * 1024 * 1024) return controller.close();
      pulled += chunk.byteLength;
      controller.enqueue(chunk);
    },
    cancel() {
      cancelled = true;
    },
  }, { highWaterMark: 0 });
  return { body, pulled: () => pulled, cancelled: () => cancelled };
}
