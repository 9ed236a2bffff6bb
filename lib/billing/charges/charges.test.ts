import { beforeAll, describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { purgeIdempotencyKeys } from '../../db/retention';
import { charges as chargeRows, idempotencyKeys, type ChargeReason } from '../../db/schema';
import { newCompany, newPayingCompany, useLocalStripe, useTestDatabase } from '../../testing/harness';
import { charges, ledger, type PayingCo } from '../../testing/scenario';
import { captureLogs } from '../../testing/log-capture';
import { chargeFor, reconcileCharges } from '../settlement';

const t = useTestDatabase();
const local = useLocalStripe();
process.env.STRIPE_TIMEOUT_MS = '700';


async function account(co: PayingCo, extra: Record<string, unknown> = {}) {
  const r = await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Grace Hopper', email: 'grace@navy.mil', ...extra } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data;
}

const counts = async (co: PayingCo) => (await local.control(`state?key=${co.processorKey}`)).account;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until the processor holds `n` PaymentIntents for the company (a late request landing). */
async function untilIntents(co: PayingCo, n: number) {
  for (let i = 0; i < 100 && (await counts(co)).payment_intents < n; i++) await sleep(50);
  expect((await counts(co)).payment_intents).toBe(n);
}

/** Runs the reconciler as if `seconds` had passed. */
async function reconcileAfter(seconds: number) {
  return reconcileCharges(t.database.db, new Date(Date.now() + seconds * 1000));
}

const deposit = (co: PayingCo, accountId: string, units: number, cents: number, headers?: Record<string, string>) =>
  co.call('POST', `/v1/accounts/${accountId}/deposit`, { body: { denomination: 'credits', amount_to_deposit: units, amount_to_charge: cents }, headers });
const creditsOf = async (co: PayingCo, accountId: string) => {
  const r = await co.call('GET', `/v1/accounts/${accountId}/balance/credits`);
  return r.status === 404 ? null : r.body.data.amount;
};

/** A direct chargeAccount request for one account's card, granting `units` credits on success. */
async function chargeRequest(co: PayingCo, accountId: string, cents: number, units: string, extra: { reason?: ChargeReason; description?: string; workKey?: string; idempotencyKey?: string } = {}) {
  const { getAccount } = await import('../accounts/accounts');
  const description = extra.description ?? 'direct charge';
  const type = extra.reason === 'refill_monthly' ? 'refill' : 'deposit';
  return {
    db: t.database.db,
    company: co.company,
    account: await getAccount({ db: t.database.db, companyId: co.company.id, accountId }),
    amount: cents,
    reason: extra.reason ?? 'deposit',
    description,
    effects: [{ kind: 'grant' as const, denomination: 'credits', amount: units, type, description }],
    now: new Date(),
    ...(extra.workKey && { workKey: extra.workKey }),
    ...(extra.idempotencyKey && { idempotencyKey: extra.idempotencyKey }),
  };
}

describe('processor customers and cards', () => {
  let co: PayingCo;
  beforeAll(async () => {
    co = await newPayingCompany(t);
  });

  it('creates a processor customer with name, email and metadata[account_id]', async () => {
    const a = await account(co);
    expect(a.processor_id).toMatch(/^cus_/);
    const customer = await local.stripe(co.processorKey).customers.retrieve(a.processor_id);
    expect(customer).toMatchObject({ name: 'Grace Hopper', email: 'grace@navy.mil', metadata: { account_id: a.id } });
    const given = await account(co, { processor_id: a.processor_id });
    expect(given.processor_id).toBe(a.processor_id);
    expect((await counts(co)).customers).toBe(1);
  });

  it('attaches a card token as the default payment method and returns only a summary', async () => {
    const a = await account(co);
    const r = await co.call('POST', `/accounts/${a.id}/card`, { body: { token: 'tok_visa' } });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ account_id: a.id, payment_method: { id: expect.stringMatching(/^pm_/), brand: 'visa', last4: '4242', exp_month: expect.any(Number), exp_year: expect.any(Number) } });
    const customer = await local.stripe(co.processorKey).customers.retrieve(a.processor_id);
    expect((customer as { invoice_settings: { default_payment_method: string } }).invoice_settings.default_payment_method).toBe(r.body.data.payment_method.id);
    const read = await co.call('GET', `/v1/accounts/${a.id}`);
    expect(read.body.data.payment_method.last4).toBe('4242');
    const atCreate = await account(co, { token: 'tok_mastercard' });
    expect(atCreate.payment_method).toMatchObject({ brand: 'mastercard', last4: '4444' });
  });

  it('refuses bad card input clearly', async () => {
    const a = await account(co);
    const bad = await co.call('POST', `/v1/accounts/${a.id}/card`, { body: { token: 'tok_nonsense' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.param).toBe('token');
    expect((await co.call('POST', `/v1/accounts/${a.id}/card`, { body: {} })).body.error.param).toBe('token');
    expect((await co.call('POST', `/v1/accounts/${a.id}/card`, { body: { token: 5 } })).status).toBe(400);
    const other = await newCompany(t);
    expect((await other.call('POST', `/v1/accounts/${a.id}/card`, { body: { token: 'tok_visa' } })).status).toBe(404);
    const noKey = await newCompany(t);
    const plain = (await noKey.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'N', email: 'n@x.io' } })).body.data;
    expect(plain.processor_id).toBeNull();
    const refused = await noKey.call('POST', `/v1/accounts/${plain.id}/card`, { body: { token: 'tok_visa' } });
    expect(refused.status).toBe(400);
  });
});

describe('charges', () => {
  let co: PayingCo;
  beforeAll(async () => {
    co = await newPayingCompany(t);
  });

  it('charges the card first and grants units only after success', async () => {
    const a = await account(co, { token: 'tok_visa' });
    const r = await co.call('POST', `/v1/accounts/${a.id}/deposit`, { body: { denomination: 'credits', amount_to_deposit: 100, amount_to_charge: 1999 } });
    expect(r.status).toBe(200);
    expect(r.body.data.amount).toBe(100);
    const made = await charges(co, a.id);
    expect(made).toHaveLength(1);
    expect(made[0]).toMatchObject({ amount: 1999, currency: 'usd', reason: 'deposit', status: 'succeeded', failure_code: null });
    const pi = await local.stripe(co.processorKey).paymentIntents.retrieve(made[0].processor_payment_intent_id!);
    expect(pi).toMatchObject({ amount: 1999, currency: 'usd', status: 'succeeded', customer: a.processor_id, metadata: { charge_id: made[0].id } });
    expect((await ledger(co, a.id))[0]).toMatchObject({ type: 'deposit', amount: 100, charge_id: made[0].id });
  });

  it('records a decline, grants nothing and answers 402 card_declined', async () => {
    const a = await account(co, { token: 'tok_chargeDeclined' });
    const r = await co.call('POST', `/v1/accounts/${a.id}/deposit`, { body: { denomination: 'credits', amount_to_deposit: 100, amount_to_charge: 500 } });
    expect(r.status).toBe(402);
    expect(r.body.error.type).toBe('card_declined');
    expect(r.body.error.message).toMatch(/declined/);
    expect((await co.call('GET', `/v1/accounts/${a.id}/balance/credits`)).status).toBe(404);
    const [charge] = (await co.call('GET', `/v1/accounts/${a.id}/charges`)).body.data;
    expect(charge).toMatchObject({ status: 'failed', failure_code: 'generic_decline', amount: 500 });
  });

  it('answers 402 payment_method_required without a card', async () => {
    const a = await account(co);
    const r = await co.call('POST', `/v1/accounts/${a.id}/deposit`, { body: { denomination: 'credits', amount_to_deposit: 1, amount_to_charge: 100 } });
    expect(r.status).toBe(402);
    expect(r.body.error.type).toBe('payment_method_required');
  });

  it('maps a processor outage to 502 processor_error, grants nothing and keeps the charge pending (a 500 is no proof of failure)', async () => {
    const a = await account(co, { token: 'tok_visa' });
    await local.control('fail', { status: 500, count: 1, path_prefix: '/v1/payment_intents', method: 'POST' });
    const r = await co.call('POST', `/v1/accounts/${a.id}/deposit`, { body: { denomination: 'credits', amount_to_deposit: 5, amount_to_charge: 300 } });
    expect(r.status).toBe(502);
    expect(r.body.error).toMatchObject({ type: 'processor_error', charge_pending: true, message: expect.stringMatching(/settled automatically/) });
    expect(JSON.stringify(r.body)).not.toMatch(/at \w+ \(|stack/);
    expect((await co.call('GET', `/v1/accounts/${a.id}/balance/credits`)).status).toBe(404);
    const [charge] = (await co.call('GET', `/v1/accounts/${a.id}/charges`)).body.data;
    expect(charge.status).toBe('pending');
    expect(r.body.error.charge_id).toBe(charge.id);
    await reconcileAfter(120); // settles it (see below), so later tests start with nothing pending
  });

  it('keeps a charge pending while the processor cannot be asked; the reconciler then makes it under the same key', async () => {
    const fresh = await newPayingCompany(t);
    const a = await account(fresh, { token: 'tok_visa' });
    await local.control('fail', { status: 500, count: 2, path_prefix: '/v1/payment_intents' });
    const r = await deposit(fresh, a.id, 5, 300);
    expect(r.status).toBe(502);
    const [charge] = await charges(fresh, a.id);
    expect(charge.status).toBe('pending');
    expect((await counts(fresh)).payment_intents).toBe(0);
    // Nothing at the processor: created again with the same idempotency key, so it is made now, once.
    await reconcileAfter(120);
    const [after] = await charges(fresh, a.id);
    expect(after).toMatchObject({ id: charge.id, status: 'succeeded', processor_payment_intent_id: expect.stringMatching(/^pi_/) });
    expect(await creditsOf(fresh, a.id)).toBe(5);
    expect((await counts(fresh)).payment_intents).toBe(1);
    await reconcileAfter(600);
    expect(await creditsOf(fresh, a.id)).toBe(5);
  });

  it('resolves a timeout by retrieving the PaymentIntent, not by charging again', async () => {
    const fresh = await newPayingCompany(t);
    const a = await account(fresh, { token: 'tok_visa' });
    await local.control('fail', { delay_ms: 1500, count: 1, path_prefix: '/v1/payment_intents', method: 'POST', after: true });
    const r = await fresh.call('POST', `/v1/accounts/${a.id}/deposit`, { body: { denomination: 'credits', amount_to_deposit: 7, amount_to_charge: 700 } });
    expect(r.status).toBe(200);
    expect(r.body.data.amount).toBe(7);
    expect((await counts(fresh)).payment_intents).toBe(1);
    const [charge] = (await fresh.call('GET', `/v1/accounts/${a.id}/charges`)).body.data;
    expect(charge.status).toBe('succeeded');
  });

  it('charges once for a repeated request with the same Idempotency-Key', async () => {
    const fresh = await newPayingCompany(t);
    const a = await account(fresh, { token: 'tok_visa' });
    const body = { denomination: 'credits', amount_to_deposit: 10, amount_to_charge: 1000 };
    const headers = { 'Idempotency-Key': 'dep-1' };
    const first = await fresh.call('POST', `/v1/accounts/${a.id}/deposit`, { body, headers });
    const second = await fresh.call('POST', `/v1/accounts/${a.id}/deposit`, { body, headers });
    expect(second.body).toEqual(first.body);
    expect((await counts(fresh)).payment_intents).toBe(1);
    expect((await fresh.call('GET', `/v1/accounts/${a.id}/balance/credits`)).body.data.amount).toBe(10);
  });

  it('reuses the charge and its processor key when work is retried with the same work key', async () => {
    const fresh = await newPayingCompany(t);
    const a = await account(fresh, { token: 'tok_visa' });
    const req = await chargeRequest(fresh, a.id, 250, '25', { reason: 'refill_monthly', description: 'retried work', workKey: 'job:retried-work' });
    const first = await chargeFor(req);
    const second = await chargeFor(req);
    expect(first.ok && second.ok).toBe(true);
    expect(second.charge.id).toBe(first.charge.id);
    expect((await counts(fresh)).payment_intents).toBe(1);
    expect((await fresh.call('GET', `/v1/accounts/${a.id}/balance/credits`)).body.data.amount).toBe(25);
    expect((await fresh.call('GET', `/v1/accounts/${a.id}/charges`)).body.data).toHaveLength(1);
  });

  it('records a failed charge when no card is on file', async () => {
    const a = await account(co);
    const r = await co.call('POST', `/v1/accounts/${a.id}/deposit`, { body: { denomination: 'credits', amount_to_deposit: 1, amount_to_charge: 100 } });
    expect(r.status).toBe(402);
    const [charge] = (await co.call('GET', `/v1/accounts/${a.id}/charges`)).body.data;
    expect(charge).toMatchObject({ status: 'failed', failure_code: 'payment_method_required', amount: 100 });
  });
});

describe('charges whose outcome is unknown', () => {
  it('a payment that reaches the processor only after our look-up stays pending, then is settled once', async () => {
    const fresh = await newPayingCompany(t);
    const a = await account(fresh, { token: 'tok_visa' });
    // We give up waiting (700 ms) and look at once: nothing yet. The card is charged at 1.5 s.
    await local.control('fail', { delay_ms: 1500, count: 1, path_prefix: '/v1/payment_intents', method: 'POST', late: true });
    const r = await deposit(fresh, a.id, 9, 900);
    expect(r.status).toBe(502);
    expect(r.body.error).toMatchObject({ type: 'processor_error', charge_pending: true });
    const [charge] = await charges(fresh, a.id);
    expect(charge).toMatchObject({ status: 'pending', failure_code: null });
    expect(await creditsOf(fresh, a.id)).toBeNull();
    await untilIntents(fresh, 1);
    // The look-up fails this time, so the reconciler creates under the same key: the processor
    // answers with the payment it already made.
    await local.control('fail', { status: 500, count: 1, path_prefix: '/v1/payment_intents', method: 'GET' });
    await reconcileAfter(120);
    const [after] = await charges(fresh, a.id);
    expect(after).toMatchObject({ id: charge.id, status: 'succeeded', processor_payment_intent_id: expect.stringMatching(/^pi_/) });
    expect(await creditsOf(fresh, a.id)).toBe(9);
    expect((await counts(fresh)).payment_intents).toBe(1);
  });

  it('a payment still processing stays pending until the processor finishes it, then settles or fails', async () => {
    const fresh = await newPayingCompany(t);
    const good = await account(fresh, { token: 'tok_visa' });
    const bad = await account(fresh, { token: 'tok_chargeDeclined' });
    await local.control('fail', { processing: true, count: 2, path_prefix: '/v1/payment_intents', method: 'POST' });
    for (const a of [good, bad]) {
      const r = await deposit(fresh, a.id, 4, 400);
      expect(r.status).toBe(502);
      expect(r.body.error.charge_pending).toBe(true);
    }
    const [goodCharge] = await charges(fresh, good.id);
    const [badCharge] = await charges(fresh, bad.id);
    for (const c of [goodCharge, badCharge]) expect(c).toMatchObject({ status: 'pending', processor_payment_intent_id: expect.stringMatching(/^pi_/) });
    await reconcileAfter(120);
    expect((await charges(fresh, good.id))[0].status).toBe('pending');
    expect((await charges(fresh, bad.id))[0].status).toBe('pending');
    for (const c of [goodCharge, badCharge]) {
      const res = await fetch(`${local.url}/__control/payment_intents/${c.processor_payment_intent_id}/complete`, { method: 'POST' });
      expect(res.status).toBe(200);
    }
    await reconcileAfter(300);
    expect((await charges(fresh, good.id))[0]).toMatchObject({ id: goodCharge.id, status: 'succeeded' });
    expect(await creditsOf(fresh, good.id)).toBe(4);
    expect((await charges(fresh, bad.id))[0]).toMatchObject({ id: badCharge.id, status: 'failed', failure_code: 'generic_decline' });
    expect(await creditsOf(fresh, bad.id)).toBeNull();
    expect((await counts(fresh)).payment_intents).toBe(2);
  });

  it('a refill charge that fails only at reconciliation still sends refill_failed (and payment_failed)', async () => {
    const fresh = await newPayingCompany(t);
    const hook = (await fresh.call('POST', '/v1/companies/{company}/webhooks', { body: { url: 'http://127.0.0.1:9/hook' } })).body.data.id;
    for (const topic of ['refill_failed', 'payment_failed']) await fresh.call('POST', `/v1/companies/{company}/webhooks/${hook}/subscribe/${topic}`);
    const bad = await account(fresh, { token: 'tok_chargeDeclined' });
    await fresh.call('POST', `/v1/accounts/${bad.id}/balance/credits`, { body: { amount: 3 } });
    await local.control('fail', { processing: true, count: 1, path_prefix: '/v1/payment_intents', method: 'POST' });
    const set = await fresh.call('PUT', `/v1/accounts/${bad.id}/balance/credits/auto_refill`, { body: { amount: 100, usd_charge: 500, refill_period: 'monthly' } });
    expect(set.status).toBe(502);
    const topics = async () => (await fresh.call('GET', `/v1/companies/{company}/webhooks/${hook}/deliveries`)).body.data.map((d: { topic: string }) => d.topic).sort();
    expect(await topics()).toEqual([]);
    const [charge] = await charges(fresh, bad.id);
    await fetch(`${local.url}/__control/payment_intents/${charge.processor_payment_intent_id}/complete`, { method: 'POST' });
    await reconcileAfter(300);
    expect((await charges(fresh, bad.id))[0]).toMatchObject({ id: charge.id, status: 'failed' });
    expect(await topics()).toEqual(['payment_failed', 'refill_failed']);
    expect(await creditsOf(fresh, bad.id)).toBe(3);
  });

  it('a retried request with the same Idempotency-Key after a timeout pays once and grants once', async () => {
    const fresh = await newPayingCompany(t);
    const a = await account(fresh, { token: 'tok_visa' });
    // The card is charged but the answer comes too late, and the look-up fails: unknown.
    await local.control('fail', { delay_ms: 1500, count: 1, path_prefix: '/v1/payment_intents', method: 'POST', after: true });
    await local.control('fail', { status: 500, count: 1, path_prefix: '/v1/payment_intents', method: 'GET' });
    const headers = { 'Idempotency-Key': 'deposit-after-timeout' };
    const first = await deposit(fresh, a.id, 8, 800, headers);
    expect(first.status).toBe(502);
    await untilIntents(fresh, 1);
    const retry = await deposit(fresh, a.id, 8, 800, headers);
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    expect(retry.body.data.amount).toBe(8);
    expect((await counts(fresh)).payment_intents).toBe(1);
    const list = await charges(fresh, a.id);
    expect(list.map((c: { status: string }) => c.status)).toEqual(['succeeded']);
    expect((await ledger(fresh, a.id)).filter((row) => row.type === 'deposit')).toHaveLength(1);
    // The answer is remembered now: a third try replays it.
    const again = await deposit(fresh, a.id, 8, 800, headers);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await creditsOf(fresh, a.id)).toBe(8);
  });

  it('a request with the key of one whose charge is pending, but another body, is refused (409) and charges nothing', async () => {
    const fresh = await newPayingCompany(t);
    const a = await account(fresh, { token: 'tok_visa' });
    await local.control('fail', { delay_ms: 1500, count: 1, path_prefix: '/v1/payment_intents', method: 'POST', after: true });
    await local.control('fail', { status: 500, count: 1, path_prefix: '/v1/payment_intents', method: 'GET' });
    const headers = { 'Idempotency-Key': 'deposit-then-another' };
    expect((await deposit(fresh, a.id, 8, 800, headers)).status).toBe(502);
    await untilIntents(fresh, 1);
    // Another amount under the same key: not the request the key's charge was made for.
    const other = await deposit(fresh, a.id, 50, 5000, headers);
    expect(other.status, JSON.stringify(other.body)).toBe(409);
    expect(other.body.error.message).toMatch(/different request/);
    // Kept for a process of the version before too: its created_at is past the 24 hours it
    // would replay within, so such a process runs the retry instead of replaying nothing.
    const [kept] = await t.database.db.select().from(idempotencyKeys).where(and(eq(idempotencyKeys.companyId, fresh.company.id), eq(idempotencyKeys.key, 'deposit-then-another')));
    expect(kept).toMatchObject({ status: 'retryable', responseStatus: null });
    expect(Date.now() - kept.createdAt.getTime()).toBeGreaterThan(24 * 3600_000);
    expect(Math.abs(Date.now() - kept.aliveAt!.getTime())).toBeLessThan(60_000);
    // Purged 24 hours after it was marked, not before.
    await purgeIdempotencyKeys(t.database.db, new Date());
    expect(await t.database.db.select().from(idempotencyKeys).where(eq(idempotencyKeys.key, 'deposit-then-another'))).toHaveLength(1);
    // The same request picks its charge up: paid once, granted once.
    const retry = await deposit(fresh, a.id, 8, 800, headers);
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    expect(await creditsOf(fresh, a.id)).toBe(8);
    expect((await charges(fresh, a.id)).map((c: { amount: number; status: string }) => [c.amount, c.status])).toEqual([[800, 'succeeded']]);
    expect((await counts(fresh)).payment_intents).toBe(1);
  });

  it('a retry while the first payment is still in flight at the processor (409) stays pending, and a later one settles it', async () => {
    const fresh = await newPayingCompany(t);
    const a = await account(fresh, { token: 'tok_visa' });
    await local.control('fail', { delay_ms: 2500, count: 1, path_prefix: '/v1/payment_intents', method: 'POST', late: true });
    const headers = { 'Idempotency-Key': 'deposit-in-flight' };
    expect((await deposit(fresh, a.id, 3, 300, headers)).status).toBe(502);
    // The processor answers 409 idempotency_key_in_use: not a failure.
    const second = await deposit(fresh, a.id, 3, 300, headers);
    expect((await charges(fresh, a.id)).map((c: { status: string }) => c.status)).toEqual(['pending']);
    expect(second.status).toBe(502);
    expect(second.body.error.charge_pending).toBe(true);
    await untilIntents(fresh, 1);
    const third = await deposit(fresh, a.id, 3, 300, headers);
    expect(third.status, JSON.stringify(third.body)).toBe(200);
    expect(third.body.data.amount).toBe(3);
    expect((await charges(fresh, a.id)).map((c: { status: string }) => c.status)).toEqual(['succeeded']);
    expect((await counts(fresh)).payment_intents).toBe(1);
  });

  it('a new request with a used Idempotency-Key whose charge failed is charged anew', async () => {
    const fresh = await newPayingCompany(t);
    const a = await account(fresh, { token: 'tok_visa' });
    const req = await chargeRequest(fresh, a.id, 100, '1', { description: 'keyed', idempotencyKey: 'k-1' });
    const first = await chargeFor(req);
    expect(first.ok).toBe(true);
    expect((await chargeFor(req)).charge.id).toBe(first.charge.id);
    await t.database.db.update(chargeRows).set({ status: 'failed' }).where(eq(chargeRows.id, first.charge.id));
    const third = await chargeFor(req);
    expect(third.ok).toBe(true);
    expect(third.charge.id).not.toBe(first.charge.id);
    // A paid charge is reused only for the life of the key (24 hours).
    const later = await chargeFor({ ...req, now: new Date(Date.now() + 25 * 3600_000) });
    expect(later.charge.id).not.toBe(third.charge.id);
    expect((await counts(fresh)).payment_intents).toBe(3);
  });

  it('reports a charge recorded as failed meanwhile as failed, even when the processor then says paid', async () => {
    const fresh = await newPayingCompany(t);
    const a = await account(fresh, { token: 'tok_visa' });
    const req = await chargeRequest(fresh, a.id, 100, '1', { description: 'raced' });
    await local.control('fail', { delay_ms: 400, count: 1, path_prefix: '/v1/payment_intents', method: 'POST', after: true });
    const logs = captureLogs('error');
    const running = chargeFor(req);
    // Once its payment is on its way to the processor (first_sent_at is written just before).
    let row: { id: string; firstSentAt: Date | null } | undefined;
    for (let i = 0; i < 100 && !row?.firstSentAt; i++) {
      [row] = await t.database.db.select().from(chargeRows).where(eq(chargeRows.accountId, a.id));
      if (!row?.firstSentAt) await sleep(10);
    }
    await t.database.db.update(chargeRows).set({ status: 'failed', failureCode: 'processor_error', failureMessage: 'given up' }).where(eq(chargeRows.id, row!.id));
    const outcome = await running.finally(logs.stop);
    expect(outcome.ok).toBe(false);
    expect(outcome.charge.status).toBe('failed');
    expect(outcome.error?.type).toBe('processor_error');
    expect(await creditsOf(fresh, a.id)).toBeNull();
    expect(logs.lines).toContainEqual(expect.objectContaining({ level: 'error', msg: 'charge paid at the processor but recorded otherwise', charge_id: row!.id, status: 'failed' }));
  });

  it('finds a payment made before a crash among all of the customer\'s payments, however many came after it', async () => {
    const fresh = await newPayingCompany(t);
    const a = await account(fresh, { token: 'tok_visa' });
    // The answer never comes back (as when the process dies mid-call): the charge is pending
    // without a PaymentIntent id, and the card is charged a moment later.
    await local.control('fail', { delay_ms: 1500, count: 1, path_prefix: '/v1/payment_intents', method: 'POST', late: true });
    expect((await deposit(fresh, a.id, 7, 700)).status).toBe(502);
    await untilIntents(fresh, 1);
    // More payments than one page of the processor's list hold come after it.
    for (let i = 0; i < 25; i++) expect((await deposit(fresh, a.id, 1, 100)).status).toBe(200);
    await untilIntents(fresh, 26);
    // Seen only after the 23 hours in which it would be given up if nothing were found.
    await reconcileAfter(23.5 * 3600);
    const first = (await charges(fresh, a.id)).find((c) => c.amount === 700);
    expect(first).toMatchObject({ status: 'succeeded', processor_payment_intent_id: expect.stringMatching(/^pi_/) });
    expect(await creditsOf(fresh, a.id)).toBe(7 + 25);
    expect((await counts(fresh)).payment_intents).toBe(26);
  });
  // Giving a charge up (by real time, not the service clock): lifecycle.test.ts.
});
