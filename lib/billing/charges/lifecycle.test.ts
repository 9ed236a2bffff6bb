process.env.BILLING_TEST_CLOCK = '1';
process.env.ADMIN_TOKEN = 'admin-secret-for-tests';
process.env.STRIPE_TIMEOUT_MS = '1500';

import { describe, expect, it } from 'vitest';
import { replaceWallClock } from '../../clock';
import { newPayingCompany, useLocalStripe, useTestDatabase } from '../../testing/harness';
import { advance, charges, createAccount, type PayingCo } from '../../testing/scenario';

// A charge's life at a processor that holds requests, loses answers and refuses keys, seen from
// outside: the API, the test clock, and the local Stripe server's failure controls.

const t = useTestDatabase();
const local = useLocalStripe();

const counts = async (co: PayingCo) => (await local.control(`state?key=${co.processorKey}`)).account;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const deposit = (co: PayingCo, account: string, units: number, cents: number, key?: string) =>
  co.call('POST', `/v1/accounts/${account}/deposit`, {
    body: { denomination: 'credits', amount_to_deposit: units, amount_to_charge: cents },
    headers: key ? { 'Idempotency-Key': key } : undefined,
  });
const credits = async (co: PayingCo, account: string) => {
  const r = await co.call('GET', `/v1/accounts/${account}/balance/credits`);
  return r.status === 404 ? null : (r.body.data.amount as number);
};
const deposits = async (co: PayingCo, account: string) =>
  ((await co.call('GET', `/v1/accounts/${account}/transactions?limit=1000`)).body.data as { type: string }[]).filter((row) => row.type === 'deposit').length;

async function untilIntents(co: PayingCo, n: number) {
  for (let i = 0; i < 200 && (await counts(co)).payment_intents < n; i++) await sleep(50);
  expect((await counts(co)).payment_intents).toBe(n);
}

/** Real time passes: a day at the processor (its keys expire) and for the service, in no time. */
let realOffset = 0;
replaceWallClock(() => Date.now() + realOffset);
async function realTimePasses(ms: number) {
  realOffset += ms;
  expect((await local.control('clock', { advance_ms: ms })).ok).toBe(true);
}

describe('a charge whose answer is late, lost or hidden by a refused key', () => {
  it('a deposit held 6 s at the processor, with the test clock moved 25 hours meanwhile, is paid once and credited once', async () => {
    const co = await newPayingCompany(t);
    const id = await createAccount(co, { token: 'tok_visa' });
    // The service waits 1.5 s; the processor holds the payment (6 s and more) until released.
    await local.control('fail', { hold: true, count: 1, path_prefix: '/v1/payment_intents', method: 'POST' });
    const sent = Date.now();
    const first = await deposit(co, id, 264, 264, 'dep-264');
    expect(first.status, JSON.stringify(first.body)).toBe(502);
    expect(first.body.error.charge_pending).toBe(true);
    // A day passes on the service's clock (not in real time): the request is still under way at
    // the processor, so "not in the customer's list" says nothing, and the charge is not failed.
    await advance(25 * 3600);
    expect((await charges(co, id)).map((c) => c.status)).toEqual(['pending']);
    // A retry with the same key carries on with the same charge: never a second payment.
    const retry = await deposit(co, id, 264, 264, 'dep-264');
    expect(retry.status, JSON.stringify(retry.body)).toBe(502);
    expect((await counts(co)).payment_intents).toBe(0);
    await sleep(Math.max(0, 6000 - (Date.now() - sent)));
    expect((await local.control('release', {})).released).toBe(1);
    await untilIntents(co, 1);
    await sleep(300);
    await advance(3600);
    const [charge] = await charges(co, id);
    expect(charge).toMatchObject({ amount: 264, status: 'succeeded' });
    expect(await credits(co, id)).toBe(264);
    expect(await deposits(co, id)).toBe(1);
    expect((await counts(co)).payment_intents).toBe(1);
  });

  it('a 401 or 403 after a lost answer leaves the paid charge pending until the key works again, then pays it once', async () => {
    const co = await newPayingCompany(t);
    const id = await createAccount(co, { token: 'tok_visa' });
    // The payment is made and its answer lost (the SDK sends it once more after a reset
    // connection: lost too); the look that follows is refused (401).
    await local.control('fail', { lose: true, count: 2, path_prefix: '/v1/payment_intents', method: 'POST' });
    await local.control('fail', { status: 401, count: 1, path_prefix: '/v1/payment_intents', method: 'GET' });
    const r = await deposit(co, id, 30, 300);
    expect(r.status, JSON.stringify(r.body)).toBe(502);
    expect((await counts(co)).payment_intents).toBe(1);
    // The company's key is refused for a while (401, then 403): the processor checks the key
    // before its idempotency cache, so no resend can reveal the payment. Not a failure.
    for (const status of [401, 403]) {
      await local.control('fail', { status, count: 1000, key: co.processorKey });
      await advance(120);
      await advance(3600);
      expect((await charges(co, id)).map((c) => c.status)).toEqual(['pending']);
      expect(await credits(co, id)).toBeNull();
      await fetch(`${local.url}/__control/fail`, { method: 'DELETE' });
    }
    await advance(3600);
    const [charge] = await charges(co, id);
    expect(charge).toMatchObject({ status: 'succeeded', processor_payment_intent_id: expect.stringMatching(/^pi_/) });
    expect(await credits(co, id)).toBe(30);
    expect((await counts(co)).payment_intents).toBe(1);
  });

  it('a 401 on the very first send is a definite refusal: nothing was charged, and the deposit is refused', async () => {
    const co = await newPayingCompany(t);
    const id = await createAccount(co, { token: 'tok_visa' });
    await local.control('fail', { status: 401, count: 1, path_prefix: '/v1/payment_intents', method: 'POST' });
    const r = await deposit(co, id, 5, 500);
    expect(r.status).toBe(502);
    expect(r.body.error.charge_pending).toBeUndefined();
    expect((await charges(co, id)).map((c) => [c.status, c.failure_code])).toEqual([['failed', 'processor_error']]);
    expect((await counts(co)).payment_intents).toBe(0);
  });

  it('a payment still processing a day later is read by its id, never created again under its expired key', async () => {
    const co = await newPayingCompany(t);
    const id = await createAccount(co, { token: 'tok_visa' });
    await local.control('fail', { processing: true, count: 1, path_prefix: '/v1/payment_intents', method: 'POST' });
    expect((await deposit(co, id, 40, 400, 'dep-processing')).status).toBe(502);
    const [pending] = await charges(co, id);
    expect(pending).toMatchObject({ status: 'pending', processor_payment_intent_id: expect.stringMatching(/^pi_/) });
    // A day passes in real time: the processor has forgotten the key.
    await realTimePasses(25 * 3600_000);
    const retry = await deposit(co, id, 40, 400, 'dep-processing');
    expect(retry.status, JSON.stringify(retry.body)).toBe(502);
    expect((await counts(co)).payment_intents).toBe(1);
    const done = await fetch(`${local.url}/__control/payment_intents/${pending.processor_payment_intent_id}/complete`, { method: 'POST' });
    expect(done.status).toBe(200);
    const paid = await deposit(co, id, 40, 400, 'dep-processing');
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    expect(await credits(co, id)).toBe(40);
    expect((await counts(co)).payment_intents).toBe(1);
  });

  it('a payment whose answer was lost is looked for, not created again, once its key may have expired', async () => {
    const co = await newPayingCompany(t);
    const id = await createAccount(co, { token: 'tok_visa' });
    // Lost answers (and the SDK's one resend after a reset connection), then a look that fails.
    await local.control('fail', { lose: true, count: 2, path_prefix: '/v1/payment_intents', method: 'POST' });
    await local.control('fail', { status: 500, count: 1, path_prefix: '/v1/payment_intents', method: 'GET' });
    expect((await deposit(co, id, 60, 600, 'dep-lost')).status).toBe(502);
    expect((await charges(co, id))[0]).toMatchObject({ status: 'pending', processor_payment_intent_id: null });
    await realTimePasses(25 * 3600_000);
    const retry = await deposit(co, id, 60, 600, 'dep-lost');
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    expect(await credits(co, id)).toBe(60);
    expect(await deposits(co, id)).toBe(1);
    expect((await counts(co)).payment_intents).toBe(1);
  });

  it('a charge the processor never made is given up by real time, not by the service clock', async () => {
    const co = await newPayingCompany(t);
    const id = await createAccount(co, { token: 'tok_visa' });
    await local.control('fail', { status: 500, count: 1000, path_prefix: '/v1/payment_intents', method: 'POST' });
    expect((await deposit(co, id, 2, 200)).status).toBe(502);
    await advance(120);
    // Days on the service's clock, within one real day: still pending, sent again under its key.
    await advance(3 * 86_400);
    expect((await charges(co, id))[0].status).toBe('pending');
    // A real day later the key may be gone: looked for only, not found, and no send can still land.
    await realTimePasses(25 * 3600_000);
    await advance(3600);
    expect((await charges(co, id))[0]).toMatchObject({ status: 'failed', failure_code: 'processor_error' });
    expect((await counts(co)).payment_intents).toBe(0);
    expect(await credits(co, id)).toBeNull();
    await fetch(`${local.url}/__control/fail`, { method: 'DELETE' });
  });

  it('a look for a lost payment reads only the payments made since the charge was first sent', async () => {
    const co = await newPayingCompany(t);
    const id = await createAccount(co, { token: 'tok_visa' });
    const account = (await co.call('GET', `/v1/accounts/${id}`)).body.data;
    const stripe = local.stripe(co.processorKey);
    // 250 payments of the customer, made two days ago.
    for (let i = 0; i < 250; i++) {
      await stripe.paymentIntents.create({ amount: 100, currency: 'usd', customer: account.processor_id, payment_method: account.payment_method.id, confirm: true, off_session: true, automatic_payment_methods: { enabled: true, allow_redirects: 'never' } });
    }
    await realTimePasses(2 * 86_400_000);
    const before = await counts(co);
    // The payment arrives after the service stopped waiting and looked.
    await local.control('fail', { delay_ms: 2500, late: true, count: 1, path_prefix: '/v1/payment_intents', method: 'POST' });
    expect((await deposit(co, id, 1, 100)).status).toBe(502);
    const after = await counts(co);
    expect(after.payment_intent_list_pages - before.payment_intent_list_pages).toBe(1);
    expect(after.payment_intents_listed - before.payment_intents_listed).toBe(0);
    await untilIntents(co, 251);
  });
});
