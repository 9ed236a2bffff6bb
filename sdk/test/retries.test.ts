import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Billing, BillingApiError, BillingConnectionError, BillingTimeoutError } from '../src/index';
import { freePort } from '../../lib/testing/servers';
import { useSdkServer } from './fixture';
import { startFaultyProxy, type FaultyProxy } from './proxy';

// The service waits 2 s for the processor, so a charge the processor holds longer is pending.
const server = useSdkServer({ STRIPE_TIMEOUT_MS: '2000' });

async function injectProcessorFault(rule: Record<string, unknown>) {
  const res = await fetch(`${server.stripe.url}/__control/fail`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rule) });
  expect(res.status).toBe(200);
}

/** Grants recorded on the account's ledger, oldest first. */
async function grants(billing: Billing, accountId: string) {
  const rows = [];
  for await (const tx of billing.transactions.list(accountId)) if (tx.type === 'grant') rows.push(tx);
  return rows.reverse();
}

describe('retries through a proxy that fails requests', () => {
  let proxy: FaultyProxy;
  let billing: Billing;
  let direct: Billing;
  let account: string;

  beforeAll(async () => {
    proxy = await startFaultyProxy(server.url);
    const co = await server.newCompany({ baseUrl: server.url });
    direct = co.billing;
    billing = new Billing({ baseUrl: proxy.url, companyId: co.companyId, apiKey: co.apiKey, initialRetryDelayMs: 20, maxRetryDelayMs: 100 });
    account = (await direct.accounts.create({ name: 'Retry', email: 'retry@example.com', token: 'tok_visa' })).id;
  });
  afterAll(async () => {
    await proxy?.close();
  });

  it('a grant whose answers were lost is retried with the same Idempotency-Key and made once', async () => {
    const from = proxy.seen.length;
    proxy.failNext('POST', `/v1/accounts/${account}/balance/credits`, ['cut-after', { status: 503, after: true }]);
    const balance = await billing.balances.create(account, 'credits', { amount: 5, reason: 'lost answers' });
    expect(balance.amount).toBe(5);

    const attempts = proxy.since(from);
    expect(attempts.map((a) => a.fault)).toEqual(['cut-after', { status: 503, after: true }, 'pass']);
    // Every attempt reached the service, with one key; the second and third were answered from the first.
    expect(attempts.map((a) => a.upstreamStatus)).toEqual([200, 200, 200]);
    expect(new Set(attempts.map((a) => a.idempotencyKey)).size).toBe(1);
    expect(attempts[0].idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    expect(attempts.map((a) => a.replayed)).toEqual([false, true, true]);
    expect((await grants(direct, account)).map((g) => [g.amount, g.description])).toEqual([[5, 'lost answers']]);
    expect((await direct.balances.get(account, 'credits')).amount).toBe(5);
  });

  it('a deposit whose answer was lost charges the card once', async () => {
    const from = proxy.seen.length;
    const before = (await direct.charges.list(account)).data.length;
    proxy.failNext('POST', `/v1/accounts/${account}/deposit`, ['cut-after']);
    const balance = await billing.balances.deposit(account, { denomination: 'credits', amount_to_deposit: 10, amount_to_charge: 700 });
    expect(balance.amount).toBe(15);
    const attempts = proxy.since(from);
    expect(attempts.map((a) => [a.fault, a.upstreamStatus, a.replayed])).toEqual([
      ['cut-after', 200, false],
      ['pass', 200, true],
    ]);
    expect(attempts[0].idempotencyKey).toBe(attempts[1].idempotencyKey);
    const charges = (await direct.charges.list(account)).data;
    expect(charges.length).toBe(before + 1);
    expect(charges[0]).toMatchObject({ amount: 700, status: 'succeeded', reason: 'deposit' });
  });

  it('a 5xx or a cut before the service saw the request is retried, a given key kept', async () => {
    const from = proxy.seen.length;
    proxy.failNext('POST', `/v1/accounts/${account}/balance/credits`, [{ status: 502, after: false }, 'cut-before', { status: 500, after: false }]);
    await billing.balances.create(account, 'credits', { amount: 1 }, { idempotencyKey: 'my-own-key-1' });
    const attempts = proxy.since(from);
    expect(attempts.map((a) => a.idempotencyKey)).toEqual(['my-own-key-1', 'my-own-key-1', 'my-own-key-1', 'my-own-key-1']);
    expect(attempts.map((a) => a.upstreamStatus)).toEqual([null, null, null, 200]);
    expect((await grants(direct, account)).length).toBe(2);
  });

  it('reads are retried too, and carry no Idempotency-Key', async () => {
    const from = proxy.seen.length;
    proxy.failNext('GET', `/v1/accounts/${account}`, ['cut-before', { status: 503, after: false }]);
    expect((await billing.accounts.get(account)).id).toBe(account);
    expect(proxy.since(from).map((a) => [a.method, a.idempotencyKey])).toEqual([
      ['GET', null],
      ['GET', null],
      ['GET', null],
    ]);
  });

  it('gives up after maxRetries with the last answer, every attempt with the same key', async () => {
    const from = proxy.seen.length;
    proxy.failNext('POST', `/v1/accounts/${account}/balance/credits`, Array(10).fill({ status: 503, after: false }));
    const err = await billing.balances.create(account, 'credits', { amount: 1 }, { maxRetries: 2 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BillingApiError);
    expect(err).toMatchObject({ status: 503, type: 'unexpected_response', request_id: null });
    const attempts = proxy.since(from);
    expect(attempts.length).toBe(3);
    expect(new Set(attempts.map((a) => a.idempotencyKey)).size).toBe(1);
    proxy.decide(() => 'pass');
    expect((await grants(direct, account)).length).toBe(2);
  });

  it('never retries a 4xx other than 429 and a 409 of a request still in flight', async () => {
    const cases: [() => Promise<unknown>, number, string, string | null][] = [
      [() => billing.accounts.create({ name: 'No email' } as never), 400, 'invalid_request', 'email'],
      [() => billing.accounts.get('a_doesnotexist'), 404, 'not_found', 'account_id'],
      [() => billing.events.record(account, { type: 'big', cost_override_amount: 1e6, cost_override_denomination: 'credits', gate_on_balance: true }), 402, 'insufficient_balance', null],
      [() => billing.balances.create(account, 'credits', { amount: 2 }, { idempotencyKey: 'my-own-key-1' }), 409, 'conflict', null],
      [() => new Billing({ baseUrl: proxy.url, companyId: 'c_nobody', apiKey: 'sk_wrong' }).accounts.get(account), 401, 'unauthorized', null],
    ];
    for (const [call, status, type, param] of cases) {
      const from = proxy.seen.length;
      const err = await call().catch((e: unknown) => e);
      expect(err, type).toBeInstanceOf(BillingApiError);
      expect(err, type).toMatchObject({ status, type, param });
      expect((err as BillingApiError).request_id).toMatch(/^req_/);
      expect(proxy.since(from).length, `${type}: one attempt`).toBe(1);
    }
  });

  it('an attempt that takes longer than timeoutMs is abandoned and retried; the last one throws BillingTimeoutError', async () => {
    const from = proxy.seen.length;
    proxy.failNext('GET', `/v1/accounts/${account}`, ['hang']);
    const t0 = Date.now();
    // The budget is per attempt; it is wide enough for the passing attempt on a loaded machine.
    expect((await billing.accounts.get(account, { timeoutMs: 2_000 })).id).toBe(account);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(2_000);
    expect(proxy.since(from).map((a) => a.fault)).toEqual(['hang', 'pass']);

    proxy.failNext('GET', `/v1/accounts/${account}`, ['hang', 'hang']);
    const err = await billing.accounts.get(account, { timeoutMs: 200, maxRetries: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BillingTimeoutError);
    expect(err).toBeInstanceOf(BillingConnectionError);
  });

  it('a caller that aborts stops the call and its retries at once', async () => {
    const from = proxy.seen.length;
    proxy.failNext('GET', `/v1/accounts/${account}`, Array(10).fill('hang'));
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('caller gave up')), 200);
    const err = await billing.accounts.get(account, { signal: controller.signal, timeoutMs: 5_000 }).catch((e: unknown) => e);
    expect((err as Error).message).toBe('caller gave up');
    expect(proxy.since(from).length).toBe(1);
    proxy.decide(() => 'pass');
  });

  it('a service that cannot be reached ends in BillingConnectionError after the retries', async () => {
    const closed = await freePort();
    const offline = new Billing({ baseUrl: `http://127.0.0.1:${closed}`, companyId: 'c_x', apiKey: 'sk_x', maxRetries: 2, initialRetryDelayMs: 10 });
    const err = await offline.accounts.get('a_x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BillingConnectionError);
    expect((err as Error).message).toContain(`http://127.0.0.1:${closed}/v1/accounts/a_x`);
  });
});

describe('a 409 for a request still in flight', () => {
  it('is retried until the first request finished, and answered with its result: one charge', async () => {
    const { billing } = await server.newCompany({ initialRetryDelayMs: 200 });
    const account = (await billing.accounts.create({ name: 'Slow', email: 'slow@example.com', token: 'tok_visa' })).id;
    // The processor holds the charge for 1.7 s, so the first deposit is still running when the
    // second arrives, and longer than one retry's backoff: the 409s are waited for, not counted.
    await injectProcessorFault({ path_prefix: '/v1/payment_intents', method: 'POST', delay_ms: 1700, count: 1 });
    const statuses: number[] = [];
    const watched = new Billing({
      baseUrl: server.url,
      companyId: billing.companyId,
      apiKey: (await billing.apiKeys.create()).api_key,
      initialRetryDelayMs: 100,
      maxRetryDelayMs: 200,
      maxRetries: 1,
      fetch: async (input, init) => {
        const res = await fetch(input, init);
        statuses.push(res.status);
        return res;
      },
    });
    const body = { denomination: 'credits', amount_to_deposit: 10, amount_to_charge: 900 };
    const first = billing.balances.deposit(account, body, { idempotencyKey: 'deposit-in-flight' });
    await new Promise((r) => setTimeout(r, 300));
    const second = await watched.balances.deposit(account, body, { idempotencyKey: 'deposit-in-flight' });
    expect(second).toEqual(await first);
    expect(statuses[0]).toBe(409);
    expect(statuses[statuses.length - 1]).toBe(200);
    const charges = (await billing.charges.list(account)).data.filter((c) => c.reason === 'deposit');
    expect(charges.map((c) => [c.amount, c.status])).toEqual([[900, 'succeeded']]);
    expect((await billing.balances.get(account, 'credits')).amount).toBe(10);
  });
});

describe('a 502 whose charge is still pending at the processor', () => {
  it('carries charge_pending and charge_id, and a retry with the same key picks up that charge: paid once', async () => {
    const { billing } = await server.newCompany();
    const account = (await billing.accounts.create({ name: 'Pending', email: 'pending@example.com', token: 'tok_visa' })).id;
    const body = { denomination: 'credits', amount_to_deposit: 9, amount_to_charge: 900 };
    // A client whose own retries (on 5xx, with the same key) go on until the processor's answer is known.
    const statuses: number[] = [];
    const retrying = new Billing({
      baseUrl: server.url,
      companyId: billing.companyId,
      apiKey: (await billing.apiKeys.create()).api_key,
      initialRetryDelayMs: 500,
      maxRetries: 10,
      fetch: async (input, init) => {
        const res = await fetch(input, init);
        statuses.push(res.status);
        return res;
      },
    });
    // The card is charged 3 s after the request reaches the processor: the service stops waiting at 2 s.
    await injectProcessorFault({ path_prefix: '/v1/payment_intents', method: 'POST', delay_ms: 3000, count: 1, late: true });
    const err = await billing.balances.deposit(account, body, { maxRetries: 0 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BillingApiError);
    const pending = err as BillingApiError;
    expect(pending).toMatchObject({ status: 502, type: 'processor_error', charge_pending: true });
    expect(pending.charge_id).toMatch(/^ch_/);
    expect(pending.error?.charge_id).toBe(pending.charge_id);
    // The key the client made for the call, to repeat it with.
    expect(pending.idempotency_key).toMatch(/^[0-9a-f-]{36}$/);

    const balance = await retrying.balances.deposit(account, body, { idempotencyKey: pending.idempotency_key! });
    expect(balance.amount).toBe(9);
    // Answered 502 (charge_pending) until the processor's answer came, then 200.
    expect(statuses[statuses.length - 1]).toBe(200);
    expect(statuses.slice(0, -1).every((status) => status === 502)).toBe(true);
    const charges = (await billing.charges.list(account)).data.filter((c) => c.reason === 'deposit');
    expect(charges.map((c) => [c.id, c.amount, c.status])).toEqual([[pending.charge_id, 900, 'succeeded']]);
  });
});

describe('429 from a server with a low rate limit', () => {
  let limited: { url: string };
  beforeAll(async () => {
    // One a second (a burst of two): eight calls at once are limited unless they arrive over six seconds.
    limited = await server.startAnother({ RATE_LIMIT_PER_SECOND: '1' });
  });

  it('waits for Retry-After and retries with the same key until every call went through, each once', async () => {
    const { billing: setup, companyId, apiKey } = await server.newCompany({ baseUrl: limited.url });
    const account = (await setup.accounts.create({ name: 'Busy', email: 'busy@example.com' })).id;
    const attempts: { key: string | null; status: number; retryAfter: string | null }[] = [];
    const billing = new Billing({
      baseUrl: limited.url,
      companyId,
      apiKey,
      maxRetries: 10,
      initialRetryDelayMs: 50,
      fetch: async (input, init) => {
        const res = await fetch(input, init);
        attempts.push({ key: new Headers(init?.headers).get('idempotency-key'), status: res.status, retryAfter: res.headers.get('retry-after') });
        return res;
      },
    });
    const started = Date.now();
    await Promise.all(Array.from({ length: 8 }, (_, i) => billing.balances.create(account, 'credits', { amount: 1, reason: `call ${i}` })));
    const limitedOnes = attempts.filter((a) => a.status === 429);
    expect(limitedOnes.length).toBeGreaterThan(0);
    expect(limitedOnes.every((a) => Number(a.retryAfter) >= 1)).toBe(true);
    // A limited call waited at least the Retry-After second before it went through.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    const byKey = new Map<string, number[]>();
    for (const a of attempts) byKey.set(a.key!, [...(byKey.get(a.key!) ?? []), a.status]);
    expect(byKey.size).toBe(8);
    for (const statuses of byKey.values()) expect(statuses.slice(0, -1).every((s) => s === 429) && statuses[statuses.length - 1] === 200).toBe(true);
    expect((await grants(setup, account)).map((g) => g.description).sort()).toEqual(Array.from({ length: 8 }, (_, i) => `call ${i}`).sort());
    expect((await setup.balances.get(account, 'credits')).amount).toBe(8);
  });

  it('does not wait for a Retry-After longer than maxRetryAfterMs', async () => {
    const { companyId, apiKey } = await server.newCompany({ baseUrl: limited.url });
    let attempts = 0;
    const billing = new Billing({
      baseUrl: limited.url,
      companyId,
      apiKey,
      maxRetryAfterMs: 500,
      fetch: (input, init) => {
        attempts++;
        return fetch(input, init);
      },
    });
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => billing.companies.list()));
    expect(attempts).toBe(8);
    const refused = results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason);
    expect(refused.length).toBeGreaterThan(0);
    for (const err of refused) expect(err).toMatchObject({ status: 429, type: 'rate_limited', retry_after: 1 });
  });
});
