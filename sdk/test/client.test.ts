import { describe, expect, it } from 'vitest';
import { Billing, BillingApiError, BillingConnectionError, BillingError, type TestClockState, type OperationTypes } from '../src/index';

/** A client whose fetch answers from `answer` and records each request's headers. */
function recording(answer: (attempt: number) => { status: number; body: unknown; headers?: Record<string, string> }, options: { maxRetries?: number; timeoutMs?: number } = {}) {
  const sent: Headers[] = [];
  const billing = new Billing({
    baseUrl: 'http://billing.invalid',
    companyId: 'c_1',
    apiKey: 'sk_test',
    initialRetryDelayMs: 1,
    maxRetryDelayMs: 2,
    ...options,
    fetch: async (_url, init) => {
      sent.push(new Headers(init?.headers));
      const { status, body, headers } = answer(sent.length - 1);
      return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
    },
  });
  return { billing, sent };
}

const ok = { status: 200, body: { data: { id: 'ev_1' } } };
const conflict = (message: string) => ({ status: 409, body: { error: { type: 'conflict', message, param: null, request_id: 'req_1' } } });

// No server: the client's own handling of headers and answers.
describe('the client', () => {
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

  it('waits for work in progress for up to timeoutMs, however many tries that takes, apart from maxRetries', async () => {
    // Retry-After: 0 keeps the test fast; what counts is that the 409s are not counted as retries.
    const inProgress = { ...conflict('Busy.'), headers: { 'retry-after': '0' } };
    const waited = recording((n) => (n < 6 ? inProgress : ok), { maxRetries: 1 });
    await waited.billing.events.record('a_1', { type: 'chat' });
    expect(waited.sent).toHaveLength(7);
    // A 5xx is still counted: one retry, then the answer.
    const failing = recording(() => ({ status: 503, body: {} }), { maxRetries: 1 });
    await expect(failing.billing.events.record('a_1', { type: 'chat' })).rejects.toMatchObject({ status: 503 });
    expect(failing.sent).toHaveLength(2);
    // Past timeoutMs of waiting, the 409 is the answer.
    const forever = recording(() => inProgress, { maxRetries: 1, timeoutMs: 50 });
    await expect(forever.billing.events.record('a_1', { type: 'chat' })).rejects.toMatchObject({ status: 409, type: 'conflict' });
    expect(forever.sent.length).toBeGreaterThan(2);
    // maxRetries 0: no retry at all.
    const none = recording(() => inProgress, { maxRetries: 0 });
    await expect(none.billing.events.record('a_1', { type: 'chat' })).rejects.toMatchObject({ status: 409 });
    expect(none.sent).toHaveLength(1);
  });

  it('puts the Idempotency-Key its call sent on the error, so that the call can be repeated with it', async () => {
    const lost = recording(() => ({ status: 502, body: { error: { type: 'processor_error', message: 'Pending.', param: null, request_id: 'req_2', charge_pending: true } } }), { maxRetries: 2 });
    const err = (await lost.billing.events.record('a_1', { type: 'chat' }).catch((e: unknown) => e)) as BillingApiError;
    expect(err).toMatchObject({ status: 502, charge_pending: true });
    expect(err.idempotency_key).toMatch(/^[0-9a-f-]{36}$/);
    expect(lost.sent.map((h) => h.get('idempotency-key'))).toEqual([err.idempotency_key, err.idempotency_key, err.idempotency_key]);
    const refused = recording(() => conflict('This Idempotency-Key was already used with a different request.'));
    expect(((await refused.billing.events.record('a_1', { type: 'chat' }, { idempotencyKey: 'mine' }).catch((e: unknown) => e)) as BillingError).idempotency_key).toBe('mine');
    // No answer at all.
    const cut = new Billing({ baseUrl: 'http://billing.invalid', companyId: 'c_1', apiKey: 'sk', maxRetries: 0, fetch: async () => Promise.reject(new TypeError('fetch failed')) });
    const gone = (await cut.events.record('a_1', { type: 'chat' }, { idempotencyKey: 'k-1' }).catch((e: unknown) => e)) as BillingConnectionError;
    expect(gone).toBeInstanceOf(BillingConnectionError);
    expect(gone.idempotency_key).toBe('k-1');
    // A read sends none.
    const read = recording(() => ({ status: 404, body: { error: { type: 'not_found', message: 'No such account.', param: 'account_id', request_id: 'req_3' } } }));
    expect(((await read.billing.accounts.get('a_x').catch((e: unknown) => e)) as BillingError).idempotency_key).toBeNull();
  });

  it('refuses a timeout that a timer cannot hold, instead of timing out at once', async () => {
    for (const timeoutMs of [Infinity, 2 ** 31, 0, -5, 1.5, NaN]) {
      expect(() => new Billing({ baseUrl: 'http://billing.invalid', timeoutMs }), String(timeoutMs)).toThrow(BillingError);
      const { billing, sent } = recording(() => ok);
      await expect(billing.accounts.get('a_1', { timeoutMs }), String(timeoutMs)).rejects.toThrow(/timeoutMs must be a whole number of milliseconds/);
      expect(sent).toHaveLength(0);
    }
    expect(new Billing({ baseUrl: 'http://billing.invalid', timeoutMs: 2 ** 31 - 1 })).toBeInstanceOf(Billing);
  });

  it('asks for a first page again after it failed, instead of failing from memory', async () => {
    const { billing, sent } = recording((n) => (n === 0 ? { status: 400, body: { error: { type: 'invalid_request', message: 'Bad.', param: null, request_id: 'req_4' } } } : { status: 200, body: { data: [{ id: 'a_1' }], has_more: false } }));
    const list = billing.accounts.list();
    await expect(list).rejects.toBeInstanceOf(BillingApiError);
    expect((await list).data).toEqual([{ id: 'a_1' }]);
    expect(sent).toHaveLength(2);
  });

  it('names the schema types that other exports hold under names of their own', () => {
    const state: TestClockState = { now: '2027-01-01T00:00:00.000Z' };
    type CreateAccount = OperationTypes['createAccount'];
    const op: CreateAccount['requestBody'] extends unknown ? true : false = true;
    expect([state.now, op]).toEqual(['2027-01-01T00:00:00.000Z', true]);
  });
});
