import { describe, expect, it } from 'vitest';
import { Billing, BillingApiError } from '../src/index';

/** A client whose fetch answers from `answer` and records each request's headers. */
function recording(answer: (attempt: number) => { status: number; body: unknown }) {
  const sent: Headers[] = [];
  const billing = new Billing({
    baseUrl: 'http://billing.invalid',
    companyId: 'c_1',
    apiKey: 'sk_test',
    initialRetryDelayMs: 1,
    maxRetryDelayMs: 2,
    fetch: async (_url, init) => {
      sent.push(new Headers(init?.headers));
      const { status, body } = answer(sent.length - 1);
      return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
    },
  });
  return { billing, sent };
}

const ok = { status: 200, body: { data: { id: 'ev_1' } } };
const conflict = (message: string) => ({ status: 409, body: { error: { type: 'conflict', message, param: null, request_id: 'req_1' } } });

// No server: the client's own handling of headers and answers.
describe.skipIf(process.env.TEST_DB === 'postgres')('the client', () => {
  it("sends the caller's own Idempotency-Key header, in any spelling, on every attempt, and makes one only without it", async () => {
    for (const name of ['Idempotency-Key', 'idempotency-key', 'IDEMPOTENCY-KEY', 'X-DedupeId', 'x-dedupeid']) {
      const { billing, sent } = recording((n) => (n === 0 ? { status: 503, body: {} } : ok));
      await billing.events.record('a_1', { type: 'chat' }, { headers: { [name]: 'order-1' } });
      expect(sent.map((h) => h.get('idempotency-key')), name).toEqual(['order-1', 'order-1']);
      expect(sent.every((h) => h.get('x-dedupeid') === null)).toBe(true);
    }
    // The option wins over a header; a header the service reads first wins over the other.
    const both = recording(() => ok);
    await both.billing.events.record('a_1', { type: 'chat' }, { idempotencyKey: 'opt', headers: { 'Idempotency-Key': 'hdr' } });
    await both.billing.events.record('a_1', { type: 'chat' }, { headers: { 'x-dedupeid': 'second', 'idempotency-key': 'first' } });
    expect(both.sent.map((h) => h.get('idempotency-key'))).toEqual(['opt', 'first']);
    const made = recording(() => ok);
    await made.billing.events.record('a_1', { type: 'chat' }, { headers: { 'X-Trace': 't' } });
    expect(made.sent[0].get('idempotency-key')).toMatch(/^[0-9a-f-]{36}$/);
    expect(made.sent[0].get('x-trace')).toBe('t');
  });

  it('retries a 409 of work in progress, and not another 409', async () => {
    const busy = recording((n) => (n === 0 ? conflict('A renewal or another plan change of this account is in progress; try again in a moment.') : ok));
    await busy.billing.events.record('a_1', { type: 'chat' });
    expect(busy.sent).toHaveLength(2);
    const running = recording((n) => (n === 0 ? conflict('A request with this Idempotency-Key is still in progress; retry shortly.') : ok));
    await running.billing.events.record('a_1', { type: 'chat' });
    expect(running.sent).toHaveLength(2);
    const reused = recording(() => conflict('This Idempotency-Key was already used with a different request.'));
    await expect(reused.billing.events.record('a_1', { type: 'chat' })).rejects.toBeInstanceOf(BillingApiError);
    expect(reused.sent).toHaveLength(1);
  });
});
