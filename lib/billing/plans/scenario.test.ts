process.env.BILLING_TEST_CLOCK = '1';
process.env.ADMIN_TOKEN = 'admin-secret-for-tests';
// The year's notifications are counted at its end: none may be purged meanwhile.
process.env.WEBHOOK_LOG_RETENTION_DAYS = '3650';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { query, sql } from '../../db/client';
import { api, newPayingCompany, useLocalStripe, useTestDatabase } from '../../testing/harness';
import { now, setTestTime } from '../../clock';
import { accounts, webhookDeliveries, webhooks, webhookSubscriptions } from '../../db/schema';
import { computePeriodEnd } from '../catalog/periods';
import { renewDuePlans } from './renewals';
import { advance, advanceTo, charges, createAccount, createPlan, expectLedgerMatches, getAccount, spend, type PayingCo } from '../../testing/scenario';

const t = useTestDatabase();
const local = useLocalStripe();


const at = (y: number, m: number, d: number, h = 9) => new Date(Date.UTC(y, m - 1, d, h));
const iso = (y: number, m: number, d: number, h = 9) => at(y, m, d, h).toISOString();

beforeAll(async () => {
  // Start on Jan 31 so the month-end rules show; persist it so the advance call starts there too.
  setTestTime(at(2027, 1, 31).getTime());
  expect((await advance(0)).toISOString()).toBe(iso(2027, 1, 31));
  // The database row is behind the in-process clock now: syncing must never move it back.
  setTestTime(at(2027, 1, 31).getTime() + 1000);
  expect((await advance(0)).toISOString()).toBe(new Date(at(2027, 1, 31).getTime() + 1000).toISOString());
  setTestTime(at(2027, 1, 31).getTime() + 1000);
});

/**
 * Called in a story (describe) of its own: once its tests are done, its accounts stop renewing.
 * The clock moves on by years in this file, and every account of the stories before would
 * otherwise renew all along (the daily plan's every day), work that no later test looks at.
 */
function endRenewalsAfterwards() {
  afterAll(async () => {
    await t.database.db.update(accounts).set({ planStatus: 'CANCELLED' });
  });
}

/** The account-creation request as the API answers it, refusals included. */
async function postAccount(co: PayingCo, extra: Record<string, unknown>) {
  return co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Ada', email: 'ada@x.io', ...extra } });
}

/** Charges oldest first. */
const chargeHistory = async (co: PayingCo, id: string) => (await charges(co, id)).reverse();

async function balances(co: PayingCo, id: string): Promise<Record<string, number>> {
  const r = await co.call('GET', `/v1/accounts/${id}/balances`);
  return Object.fromEntries(r.body.data.map((b: { denomination: string; amount: number }) => [b.denomination, b.amount]));
}

const useUnits = (co: PayingCo, id: string, denomination: string, amount: number | string) => spend(co, id, amount, { type: 'use', denomination });

async function processorCounts(co: PayingCo) {
  return (await local.control(`state?key=${co.processorKey}`)).account as { customers: number; payment_intents: number };
}

const sortFlags = (f: { name: string }[]) => [...f].sort((a, b) => a.name.localeCompare(b.name));

describe('attaching a plan at creation', () => {
  endRenewalsAfterwards();
  let co: PayingCo;
  let pro: { id: string };
  beforeAll(async () => {
    co = await newPayingCompany(t);
    pro = await createPlan(co, {
      name: 'Pro',
      charge_amount: 2500,
      billing_period: 'month',
      overage_charge_mode: 'postpay',
      balances: [
        { amount: 1000, denomination: 'tokens', overage_charge_amount: 2 },
        { amount: '10.5', denomination: 'gb', overage_charge_amount: 50 },
      ],
      flags: { sso: true, beta: false },
    });
  });

  it('charges charge_amount once through the processor, then grants every balance', async () => {
    const r = await postAccount(co, { plan_id: pro.id, token: 'tok_visa' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const a = r.body.data;
    expect(a).toMatchObject({
      plan_id: pro.id,
      plan_status: 'ACTIVE',
      plan_renewal_cadence: 'MONTHLY',
      last_plan_renewal: now().toISOString(),
      next_plan_renewal: computePeriodEnd(now(), 'month', 1).toISOString(),
      scheduled_plan_id: null,
    });
    expect(sortFlags(a.flags)).toEqual([{ name: 'beta', enabled: false }, { name: 'sso', enabled: true }]);
    const list = await chargeHistory(co, a.id);
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ amount: 2500, reason: 'plan_start', status: 'succeeded' });
    const pi = await local.stripe(co.processorKey).paymentIntents.retrieve(list[0].processor_payment_intent_id!);
    expect(pi).toMatchObject({ amount: 2500, currency: 'usd', status: 'succeeded', customer: a.processor_id, metadata: { charge_id: list[0].id } });
    expect((await processorCounts(co)).payment_intents).toBe(1);
    const bals = (await co.call('GET', `/v1/accounts/${a.id}/balances`)).body.data;
    expect(bals.map((b: Record<string, unknown>) => [b.denomination, b.amount, b.managed_by_plan_id])).toEqual([
      ['gb', 10.5, pro.id],
      ['tokens', 1000, pro.id],
    ]);
    const ledger = (await co.call('GET', `/v1/accounts/${a.id}/transactions`)).body.data;
    expect(ledger).toHaveLength(2);
    for (const row of ledger) expect(row).toMatchObject({ type: 'plan_grant', charge_id: list[0].id, description: expect.stringContaining('Pro') });
    expect((await getAccount(co, a.id)).plan_status).toBe('ACTIVE');
    await expectLedgerMatches(t.database.db, co, a.id);
  });

  it('refuses a chargeable plan without payment information with 402, creating nothing', async () => {
    const before = await processorCounts(co);
    const listed = (await co.call('GET', '/v1/companies/{company}/accounts')).body.data.length;
    const r = await postAccount(co, { plan_id: pro.id });
    expect(r.status).toBe(402);
    expect(r.body.error).toMatchObject({ type: 'payment_method_required' });
    // A processor customer without a default card is no payment information either.
    const bare = await local.stripe(co.processorKey).customers.create({ name: 'bare' });
    const withCustomer = await postAccount(co, { plan_id: pro.id, processor_id: bare.id });
    expect(withCustomer.status).toBe(402);
    expect(withCustomer.body.error.type).toBe('payment_method_required');
    expect((await co.call('GET', '/v1/companies/{company}/accounts')).body.data).toHaveLength(listed);
    const after = await processorCounts(co);
    expect(after.customers).toBe(before.customers + 1); // only the one this test made itself
    expect(after.payment_intents).toBe(before.payment_intents);
  });

  it('answers 402 card_declined for a declined first charge and keeps no account', async () => {
    const listed = (await co.call('GET', '/v1/companies/{company}/accounts')).body.data.length;
    const r = await postAccount(co, { plan_id: pro.id, token: 'tok_chargeDeclined' });
    expect(r.status).toBe(402);
    expect(r.body.error.type).toBe('card_declined');
    expect((await co.call('GET', '/v1/companies/{company}/accounts')).body.data).toHaveLength(listed);
  });

  it('keeps the account when the first charge has an unknown outcome, and starts the plan once it is confirmed', async () => {
    const fresh = await newPayingCompany(t);
    const p = await createPlan(fresh, { name: 'Pro', charge_amount: 2500, balances: [{ amount: 1000, denomination: 'tokens' }] });
    // The PaymentIntent is made, but its answer is lost, and the look-up fails too.
    await local.control('fail', { status: 500, count: 1, path_prefix: '/v1/payment_intents', method: 'POST', after: true });
    await local.control('fail', { status: 500, count: 1, path_prefix: '/v1/payment_intents', method: 'GET' });
    const r = await postAccount(fresh, { plan_id: p.id, token: 'tok_visa' });
    expect(r.status).toBe(502);
    expect(r.body.error).toMatchObject({ type: 'processor_error', account_id: expect.stringMatching(/^a_/), charge_pending: true });
    const id = r.body.error.account_id;
    expect(await getAccount(fresh, id)).toMatchObject({ plan_status: 'NONE' });
    expect((await chargeHistory(fresh, id)).map((c) => [c.amount, c.status])).toEqual([[2500, 'pending']]);
    const { reconcileCharges } = await import('../settlement');
    await reconcileCharges(t.database.db, new Date(now().getTime() + 120_000));
    expect(await getAccount(fresh, id)).toMatchObject({ plan_status: 'ACTIVE', plan_id: p.id });
    expect((await chargeHistory(fresh, id)).map((c) => [c.amount, c.status])).toEqual([[2500, 'succeeded']]);
    expect(await balances(fresh, id)).toEqual({ tokens: 1000 });
    expect((await processorCounts(fresh)).payment_intents).toBe(1);
  });

  it('needs no card for a free plan', async () => {
    const free = await createPlan(co, { name: 'Free', balances: [{ amount: 50, denomination: 'tokens' }], flags: { watermark: true } });
    const r = await postAccount(co, { plan_id: free.id });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toMatchObject({ plan_status: 'ACTIVE', plan_id: free.id, flags: [{ name: 'watermark', enabled: true }], payment_method: null });
    expect(await balances(co, r.body.data.id)).toEqual({ tokens: 50 });
    expect(await chargeHistory(co, r.body.data.id)).toEqual([]);
  });

  it('prices plan_variable_amounts by the formula, to the cent, and grants the chosen amounts', async () => {
    const seats = await createPlan(co, {
      name: 'Seats',
      charge_amount: 1000,
      balances: [
        { amount: 5, denomination: 'seats', variable_unit_price: 250 },
        { amount: 1000, denomination: 'tokens', variable_unit_price: '0.015' },
        { amount: 10, denomination: 'gb' },
      ],
    });
    // 1000 + (8 − 5) × 250 + (1333 − 1000) × 0.015 = 1754.995 → 1755 (half up)
    const r = await postAccount(co, { plan_id: seats.id, token: 'tok_visa', plan_variable_amounts: { seats: 8, tokens: '1333' } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.plan_variable_amounts).toEqual({ seats: 8, tokens: 1333 });
    const [c] = await chargeHistory(co, r.body.data.id);
    expect(c).toMatchObject({ amount: 1755, status: 'succeeded' });
    expect((await local.stripe(co.processorKey).paymentIntents.retrieve(c.processor_payment_intent_id!)).amount).toBe(1755);
    expect(await balances(co, r.body.data.id)).toEqual({ seats: 8, tokens: 1333, gb: 10 });
    // Fewer seats lower the charge: 1000 − 3 × 250 = 250.
    const fewer = await postAccount(co, { plan_id: seats.id, token: 'tok_visa', plan_variable_amounts: { seats: 2 } });
    expect((await chargeHistory(co, fewer.body.data.id)).map((x) => x.amount)).toEqual([250]);
    expect(await balances(co, fewer.body.data.id)).toEqual({ seats: 2, tokens: 1000, gb: 10 });
    // Never below zero, and then no card is needed: 1000 − 1250 − 15 → 0.
    const none = await postAccount(co, { plan_id: seats.id, plan_variable_amounts: { seats: 0, tokens: 0 } });
    expect(none.status, JSON.stringify(none.body)).toBe(200);
    expect(none.body.data.plan_status).toBe('ACTIVE');
    expect(await chargeHistory(co, none.body.data.id)).toEqual([]);
    expect(await balances(co, none.body.data.id)).toEqual({ seats: 0, tokens: 0, gb: 10 });
  });

  it('attaches the plan only when the card collector completes, charging once', async () => {
    const r = await postAccount(co, { plan_id: pro.id, enable_card_collector: true });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const a = r.body.data;
    expect(a.card_collector_url).toMatch(/\/collect\/[A-Za-z0-9_-]+$/);
    expect(a).toMatchObject({ plan_id: pro.id, plan_status: 'PENDING_PAYMENT_METHOD', last_plan_renewal: null, next_plan_renewal: null, flags: [] });
    expect(await balances(co, a.id)).toEqual({});
    expect(await chargeHistory(co, a.id)).toEqual([]);
    const path = new URL(a.card_collector_url).pathname;
    const done = await api('POST', `${path}/submit`, { body: { token: 'tok_visa' } });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body.data.plan_status).toBe('ACTIVE');
    const after = await getAccount(co, a.id);
    expect(after).toMatchObject({ plan_status: 'ACTIVE', last_plan_renewal: now().toISOString(), next_plan_renewal: computePeriodEnd(now(), 'month', 1).toISOString() });
    expect(sortFlags(after.flags)).toEqual([{ name: 'beta', enabled: false }, { name: 'sso', enabled: true }]);
    expect((await chargeHistory(co, a.id)).map((c) => [c.amount, c.status])).toEqual([[2500, 'succeeded']]);
    expect(await balances(co, a.id)).toEqual({ gb: 10.5, tokens: 1000 });
    const again = await api('POST', `${path}/submit`, { body: { token: 'tok_visa' } });
    expect(again.status).toBe(409);
    expect(again.body.error.type).toBe('conflict');
    expect((await chargeHistory(co, a.id)).filter((c) => c.status === 'succeeded')).toHaveLength(1);
  });

  it('keeps the collector link usable after a declined card', async () => {
    const a = (await postAccount(co, { plan_id: pro.id, enable_card_collector: 1 })).body.data;
    const path = new URL(a.card_collector_url).pathname;
    const declined = await api('POST', `${path}/submit`, { body: { token: 'tok_chargeDeclined' } });
    expect(declined.status).toBe(402);
    expect(declined.body.error.type).toBe('card_declined');
    expect((await getAccount(co, a.id)).plan_status).toBe('PENDING_PAYMENT_METHOD');
    expect(await balances(co, a.id)).toEqual({});
    const ok = await api('POST', `${path}/submit`, { body: { token: 'tok_visa' } });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect((await getAccount(co, a.id)).plan_status).toBe('ACTIVE');
    expect((await chargeHistory(co, a.id)).map((c) => [c.amount, c.status])).toEqual([
      [2500, 'failed'],
      [2500, 'succeeded'],
    ]);
    expect(await balances(co, a.id)).toEqual({ gb: 10.5, tokens: 1000 });
  });
});

describe('a year of monthly renewals from Jan 31', () => {
  endRenewalsAfterwards();
  let co: PayingCo;
  let pro: { id: string };
  let max: { id: string };
  let A: string; // overage, a failed renewal, an upgrade and a downgrade
  let B: string; // the same anchor, left alone: every month-end date
  const thresholds = async (accountId: string) =>
    (await t.database.db.select().from(webhookDeliveries).where(and(eq(webhookDeliveries.accountId, accountId), eq(webhookDeliveries.topic, 'threshold')))).length;

  beforeAll(async () => {
    co = await newPayingCompany(t);
    pro = await createPlan(co, {
      name: 'Pro',
      charge_amount: 2000,
      billing_period: 'month',
      overage_charge_mode: 'postpay',
      threshold_alert_percentage: '80',
      balances: [
        { amount: 1000, denomination: 'tokens', overage_charge_amount: 3 },
        { amount: 10, denomination: 'gb', overage_charge_amount: 50 },
      ],
    });
    max = await createPlan(co, {
      name: 'Max',
      charge_amount: 5000,
      billing_period: 'monthly',
      overage_charge_mode: 'postpay',
      threshold_alert_percentage: 80,
      balances: [
        { amount: 5000, denomination: 'tokens', overage_charge_amount: 2 },
        { amount: 50, denomination: 'gb', overage_charge_amount: 40 },
      ],
    });
    const basic = await createPlan(co, { name: 'Basic', charge_amount: 100, balances: [{ amount: 10, denomination: 'tokens' }] });
    const hook = await co.call('POST', '/v1/companies/{company}/webhooks', { body: { url: 'http://127.0.0.1:9/x' } });
    if (hook.status === 200) {
      expect((await co.call('POST', `/v1/companies/{company}/webhooks/${hook.body.data.id}/subscribe/threshold`)).status).toBe(200);
    } else {
      const id = `w_${Date.now()}`;
      await t.database.db.insert(webhooks).values({ id, companyId: co.company.id, url: 'http://127.0.0.1:9/x', secretEnc: 'x', style: 'topic', createdAt: now() });
      await t.database.db.insert(webhookSubscriptions).values({ webhookId: id, companyId: co.company.id, topic: 'threshold', createdAt: now() });
    }
    setTestTime(at(2027, 1, 31).getTime() + 1000);
    await advanceTo(new Date(at(2027, 1, 31).getTime() + 1000)); // a no-op: keeps the file's clock in one place
    A = await createAccount(co, { plan_id: pro.id, token: 'tok_visa' });
    B = await createAccount(co, { plan_id: basic.id, token: 'tok_visa' });
  });

  it('runs the year: overage, a failed renewal, an upgrade, a downgrade; every charge and balance checked', async () => {
    const T0 = new Date(at(2027, 1, 31).getTime() + 1000);
    const s = (d: Date) => new Date(d.getTime() + 1000); // every date of this account is 09:00:01
    expect(await getAccount(co, A)).toMatchObject({ last_plan_renewal: T0.toISOString(), next_plan_renewal: s(at(2027, 2, 28)).toISOString() });

    // Period 1 (Jan 31 → Feb 28): 1250 of 1000 tokens; the 80% alert fires once, at the crossing.
    await useUnits(co, A, 'tokens', 500);
    expect(await thresholds(A)).toBe(0);
    await useUnits(co, A, 'tokens', 400);
    expect(await thresholds(A)).toBe(1);
    await useUnits(co, A, 'tokens', 350);
    await useUnits(co, A, 'gb', 4);
    expect(await thresholds(A)).toBe(1);
    expect(await balances(co, A)).toEqual({ tokens: -250, gb: 6 });

    await advanceTo(s(at(2027, 2, 28)));
    let list = await chargeHistory(co, A);
    expect(list.map((c) => [c.amount, c.reason, c.status])).toEqual([
      [2000, 'plan_start', 'succeeded'],
      [2750, 'plan_renewal', 'succeeded'], // 2000 + 250 × 3
    ]);
    expect(list[1].description).toMatch(/overage 250 tokens = 750 cents/);
    expect(await balances(co, A)).toEqual({ tokens: 1000, gb: 10 });
    expect(await getAccount(co, A)).toMatchObject({ plan_status: 'ACTIVE', last_plan_renewal: s(at(2027, 2, 28)).toISOString(), next_plan_renewal: s(at(2027, 3, 31)).toISOString() });
    expect(await thresholds(A)).toBe(1);

    // Period 2 (Feb 28 → Mar 31): half a token and 3 GB over; the alert fires again, per balance.
    await useUnits(co, A, 'tokens', '1000.5');
    await useUnits(co, A, 'gb', 13);
    expect(await thresholds(A)).toBe(3);
    await advanceTo(s(at(2027, 3, 31)));
    list = await chargeHistory(co, A);
    expect(list[2]).toMatchObject({ amount: 2152, status: 'succeeded' }); // 2000 + 0.5 × 3 = 1.5 → 2 + 3 × 50
    expect(await balances(co, A)).toEqual({ tokens: 1000, gb: 10 });

    // Period 3 (Mar 31 → Apr 30): the card starts declining before the renewal.
    await useUnits(co, A, 'tokens', 1100);
    expect(await thresholds(A)).toBe(4);
    expect((await co.call('POST', `/v1/accounts/${A}/card`, { body: { token: 'tok_chargeDeclined' } })).status).toBe(200);
    await advanceTo(s(at(2027, 4, 30)));
    expect(await getAccount(co, A)).toMatchObject({ plan_status: 'PAST_DUE', last_plan_renewal: s(at(2027, 3, 31)).toISOString(), next_plan_renewal: s(at(2027, 4, 30)).toISOString() });
    // Nothing granted, and what was left of the period's allowance expired at its end: the debt stays.
    expect(await balances(co, A)).toEqual({ tokens: -100, gb: 0 });
    // Retries at +1 and +3 days fail too.
    await advanceTo(s(at(2027, 5, 2)));
    await useUnits(co, A, 'tokens', 10);
    await advanceTo(s(at(2027, 5, 4)));
    list = await chargeHistory(co, A);
    expect(list.slice(3).map((c) => [c.amount, c.status, c.created_at])).toEqual([
      [2300, 'failed', s(at(2027, 4, 30)).toISOString()],
      [2300, 'failed', s(at(2027, 5, 1)).toISOString()],
      [2330, 'failed', s(at(2027, 5, 3)).toISOString()],
    ]);
    expect((await getAccount(co, A)).plan_status).toBe('PAST_DUE');
    expect(await balances(co, A)).toEqual({ tokens: -110, gb: 0 });
    expect(await thresholds(A)).toBe(4); // same period: no second alert
    // A new card retries at once: success renews the period that was due and returns to ACTIVE.
    expect((await co.call('POST', `/v1/accounts/${A}/card`, { body: { token: 'tok_visa' } })).status).toBe(200);
    list = await chargeHistory(co, A);
    expect(list[6]).toMatchObject({ amount: 2330, status: 'succeeded', reason: 'plan_renewal', created_at: s(at(2027, 5, 4)).toISOString() });
    expect(await getAccount(co, A)).toMatchObject({ plan_status: 'ACTIVE', last_plan_renewal: s(at(2027, 4, 30)).toISOString(), next_plan_renewal: s(at(2027, 5, 31)).toISOString() });
    expect(await balances(co, A)).toEqual({ tokens: 1000, gb: 10 });
    // The May 7 retry slot is gone: nothing more is charged then.
    await advanceTo(s(at(2027, 5, 8)));
    expect(await chargeHistory(co, A)).toHaveLength(7);

    // Period 4 (Apr 30 → May 31): light use, no overage, no alert.
    await useUnits(co, A, 'tokens', 200);
    await advanceTo(s(at(2027, 5, 31)));
    expect((await chargeHistory(co, A))[7]).toMatchObject({ amount: 2000, status: 'succeeded' });
    expect(await thresholds(A)).toBe(4);

    // Period 5 (May 31 → Jun 30): upgrade on Jun 11 with 2 GB over.
    await useUnits(co, A, 'tokens', 600);
    await useUnits(co, A, 'gb', 12);
    expect(await thresholds(A)).toBe(5);
    await advanceTo(s(at(2027, 6, 11)));
    const up = await co.call('POST', `/v1/accounts/${A}/changeplan`, { body: { plan_id: max.id } });
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    // Credit: 2000 × 19 of 30 days = 1266.67 → 1267; 5000 − 1267 + 2 GB × 50 overage = 3833.
    expect(up.body.data).toMatchObject({ plan_id: max.id, plan_status: 'ACTIVE', last_plan_renewal: s(at(2027, 6, 11)).toISOString(), next_plan_renewal: s(at(2027, 7, 11)).toISOString(), scheduled_plan_id: null });
    list = await chargeHistory(co, A);
    expect(list[8]).toMatchObject({ amount: 3833, reason: 'plan_change', status: 'succeeded' });
    expect(list[8].description).toMatch(/5000 cents less 1267 cents credit/);
    expect(list[8].description).toMatch(/overage 2 gb = 100 cents/);
    expect(await balances(co, A)).toEqual({ tokens: 5000, gb: 50 });
    const managed = (await co.call('GET', `/v1/accounts/${A}/balances`)).body.data.map((b: { managed_by_plan_id: string }) => b.managed_by_plan_id);
    expect(managed).toEqual([max.id, max.id]);

    // Max period (Jun 11 → Jul 11): 90% used, one alert in the new period.
    await useUnits(co, A, 'tokens', 4500);
    expect(await thresholds(A)).toBe(6);
    await advanceTo(s(at(2027, 7, 11)));
    expect((await chargeHistory(co, A))[9]).toMatchObject({ amount: 5000, status: 'succeeded', created_at: s(at(2027, 7, 11)).toISOString() });
    expect(await balances(co, A)).toEqual({ tokens: 5000, gb: 50 });

    // Jul 11 → Aug 11: 100 tokens over, and a downgrade scheduled on Jul 20.
    await useUnits(co, A, 'tokens', 5100);
    expect(await thresholds(A)).toBe(7);
    await advanceTo(s(at(2027, 7, 20)));
    const down = await co.call('POST', `/v1/accounts/${A}/changeplan`, { body: { plan_id: pro.id } });
    expect(down.status, JSON.stringify(down.body)).toBe(200);
    expect(down.body.data).toMatchObject({ plan_id: max.id, scheduled_plan_id: pro.id, next_plan_renewal: s(at(2027, 8, 11)).toISOString() });
    expect(await chargeHistory(co, A)).toHaveLength(10);
    expect(await balances(co, A)).toEqual({ tokens: -100, gb: 50 });
    await advanceTo(s(at(2027, 8, 11)));
    list = await chargeHistory(co, A);
    expect(list[10]).toMatchObject({ amount: 2200, status: 'succeeded' }); // Pro 2000 + 100 × 2 at Max's price
    expect(await getAccount(co, A)).toMatchObject({ plan_id: pro.id, scheduled_plan_id: null, plan_status: 'ACTIVE', last_plan_renewal: s(at(2027, 8, 11)).toISOString(), next_plan_renewal: s(at(2027, 9, 11)).toISOString() });
    expect(await balances(co, A)).toEqual({ tokens: 1000, gb: 10 });

    // The rest of the year on Pro.
    await advanceTo(s(at(2028, 1, 31)));
    list = await chargeHistory(co, A);
    expect(list.map((c) => [c.amount, c.status, c.created_at.slice(0, 10)])).toEqual([
      [2000, 'succeeded', '2027-01-31'],
      [2750, 'succeeded', '2027-02-28'],
      [2152, 'succeeded', '2027-03-31'],
      [2300, 'failed', '2027-04-30'],
      [2300, 'failed', '2027-05-01'],
      [2330, 'failed', '2027-05-03'],
      [2330, 'succeeded', '2027-05-04'],
      [2000, 'succeeded', '2027-05-31'],
      [3833, 'succeeded', '2027-06-11'],
      [5000, 'succeeded', '2027-07-11'],
      [2200, 'succeeded', '2027-08-11'],
      [2000, 'succeeded', '2027-09-11'],
      [2000, 'succeeded', '2027-10-11'],
      [2000, 'succeeded', '2027-11-11'],
      [2000, 'succeeded', '2027-12-11'],
      [2000, 'succeeded', '2028-01-11'],
    ]);
    // Every successful charge is a succeeded PaymentIntent of the same amount on the processor.
    const stripe = local.stripe(co.processorKey);
    for (const c of list) {
      if (c.status !== 'succeeded') continue;
      const pi = await stripe.paymentIntents.retrieve(c.processor_payment_intent_id!);
      expect([pi.amount, pi.status]).toEqual([c.amount, 'succeeded']);
    }
    expect(await balances(co, A)).toEqual({ tokens: 1000, gb: 10 });
    expect(await getAccount(co, A)).toMatchObject({ plan_status: 'ACTIVE', last_plan_renewal: s(at(2028, 1, 11)).toISOString(), next_plan_renewal: s(at(2028, 2, 11)).toISOString() });
    await expectLedgerMatches(t.database.db, co, A);
    // Renewals reset (never add): no rollover rows beyond one per balance per renewal.
    const ledger = (await co.call('GET', `/v1/accounts/${A}/transactions?limit=1000`)).body.data as { type: string; description: string }[];
    expect(ledger.every((r) => r.description.length > 0)).toBe(true);
    expect(new Set(ledger.map((r) => r.type))).toEqual(new Set(['plan_grant', 'expire', 'overage', 'event']));
  });

  it('renews an untouched Jan 31 account on every month end, once each', async () => {
    const list = await chargeHistory(co, B);
    const dates = list.map((c) => c.created_at);
    const s = (d: Date) => new Date(d.getTime() + 1000).toISOString();
    expect(dates).toEqual([
      s(at(2027, 1, 31)),
      s(at(2027, 2, 28)),
      s(at(2027, 3, 31)),
      s(at(2027, 4, 30)),
      s(at(2027, 5, 31)),
      s(at(2027, 6, 30)),
      s(at(2027, 7, 31)),
      s(at(2027, 8, 31)),
      s(at(2027, 9, 30)),
      s(at(2027, 10, 31)),
      s(at(2027, 11, 30)),
      s(at(2027, 12, 31)),
      s(at(2028, 1, 31)),
    ]);
    expect(list.every((c) => c.amount === 100 && c.status === 'succeeded')).toBe(true);
    // Leap year next: Feb 29.
    expect(await getAccount(co, B)).toMatchObject({ last_plan_renewal: s(at(2028, 1, 31)), next_plan_renewal: s(at(2028, 2, 29)) });
    expect(await balances(co, B)).toEqual({ tokens: 10 });
  });

  it('never renews twice, even with two workers at once', async () => {
    const basic2 = await createPlan(co, { name: 'Basic 2', charge_amount: 300, balances: [{ amount: 7, denomination: 'tokens' }] });
    const C = await getAccount(co, await createAccount(co, { plan_id: basic2.id, token: 'tok_visa' }));
    await useUnits(co, C.id, 'tokens', 3);
    const due = new Date(C.next_plan_renewal);
    // Straight to the due time without the advance call: the two workers below do the work.
    setTestTime(due.getTime());
    const db = t.database.db;
    const [{ n }] = await query<{ n: number }>(db, sql`select count(*)::int as n from accounts where plan_status = 'ACTIVE' and next_plan_renewal <= ${due.toISOString()}::timestamptz`);
    let renewed = 0;
    for (;;) {
      const [one, two] = await Promise.all([renewDuePlans(db, now()), renewDuePlans(db, now())]);
      if (!one && !two) break;
      renewed += one + two;
    }
    expect(renewed).toBe(n);
    const list = await chargeHistory(co, C.id);
    expect(list.map((c) => [c.amount, c.status])).toEqual([
      [300, 'succeeded'],
      [300, 'succeeded'],
    ]);
    const intents = await local.stripe(co.processorKey).paymentIntents.list({ customer: C.processor_id, limit: 100 });
    expect(intents.data.map((pi) => pi.amount)).toEqual([300, 300]);
    const [row] = await db.select().from(accounts).where(eq(accounts.id, C.id));
    expect(row.planPeriods).toBe(1);
    expect(row.lastPlanRenewal?.toISOString()).toBe(due.toISOString());
    expect(row.nextPlanRenewal?.toISOString()).toBe(computePeriodEnd(new Date(C.last_plan_renewal), 'month', 2).toISOString());
    expect(row.renewalLockedUntil).toBeNull();
    expect(await balances(co, C.id)).toEqual({ tokens: 7 });
    // And again: nothing is due any more.
    expect(await renewDuePlans(db, now())).toBe(0);
    expect(await chargeHistory(co, C.id)).toHaveLength(2);
    await expectLedgerMatches(t.database.db, co, C.id);
  });
});

describe('yearly, weekly and daily plans', () => {
  endRenewalsAfterwards();
  let co: PayingCo;
  beforeAll(async () => {
    co = await newPayingCompany(t);
    await advance(0);
  });

  it('renews a yearly plan started on Feb 29 on Feb 28 of the next year', async () => {
    await advanceTo(at(2028, 2, 29, 10));
    const yearly = await createPlan(co, { name: 'Annual', charge_amount: 10000, billing_period: 'year', balances: [{ amount: 12, denomination: 'months' }] });
    const a = await getAccount(co, await createAccount(co, { plan_id: yearly.id, token: 'tok_visa' }));
    expect(a).toMatchObject({ plan_renewal_cadence: 'YEARLY', last_plan_renewal: iso(2028, 2, 29, 10), next_plan_renewal: iso(2029, 2, 28, 10) });
    await useUnits(co, a.id, 'months', 5);
    await advanceTo(at(2029, 2, 28, 10));
    expect((await chargeHistory(co, a.id)).map((c) => [c.amount, c.created_at])).toEqual([
      [10000, iso(2028, 2, 29, 10)],
      [10000, iso(2029, 2, 28, 10)],
    ]);
    expect(await getAccount(co, a.id)).toMatchObject({ last_plan_renewal: iso(2029, 2, 28, 10), next_plan_renewal: iso(2030, 2, 28, 10) });
    expect(await balances(co, a.id)).toEqual({ months: 12 });
  });

  it('renews weekly and daily plans on the right dates', async () => {
    const weekly = await createPlan(co, { name: 'Weekly', charge_amount: 300, billing_period: 'week', balances: [{ amount: 70, denomination: 'calls' }] });
    const daily = await createPlan(co, { name: 'Daily', charge_amount: 50, billing_period: 'day', balances: [{ amount: 10, denomination: 'calls' }] });
    const start = now();
    const w = await getAccount(co, await createAccount(co, { plan_id: weekly.id, token: 'tok_visa' }));
    const d = await getAccount(co, await createAccount(co, { plan_id: daily.id, token: 'tok_visa' }));
    expect(w).toMatchObject({ plan_renewal_cadence: 'WEEKLY', next_plan_renewal: new Date(start.getTime() + 7 * 86_400_000).toISOString() });
    expect(d).toMatchObject({ plan_renewal_cadence: 'DAILY', next_plan_renewal: new Date(start.getTime() + 86_400_000).toISOString() });
    await useUnits(co, d.id, 'calls', 9);
    await advanceTo(new Date(start.getTime() + 21 * 86_400_000));
    const days = (n: number) => new Date(start.getTime() + n * 86_400_000).toISOString();
    expect((await chargeHistory(co, w.id)).map((c) => [c.amount, c.created_at])).toEqual([0, 7, 14, 21].map((n) => [300, days(n)]));
    expect((await chargeHistory(co, d.id)).map((c) => c.created_at)).toEqual(Array.from({ length: 22 }, (_, n) => days(n)));
    expect(await getAccount(co, w.id)).toMatchObject({ last_plan_renewal: days(21), next_plan_renewal: days(28) });
    expect(await getAccount(co, d.id)).toMatchObject({ last_plan_renewal: days(21), next_plan_renewal: days(22) });
    expect(await balances(co, d.id)).toEqual({ calls: 10 });
  });
});

describe('changes mid-cycle', () => {
  endRenewalsAfterwards();
  let co: PayingCo;
  let seats: { id: string };
  beforeAll(async () => {
    co = await newPayingCompany(t);
    await advance(0);
    seats = await createPlan(co, { name: 'Seats', charge_amount: 1000, balances: [{ amount: 5, denomination: 'seats', variable_unit_price: 250 }] });
  });

  it('schedules fewer chosen units for the next renewal, can undo it, and applies it then', async () => {
    const a = await getAccount(co, await createAccount(co, { plan_id: seats.id, token: 'tok_visa', plan_variable_amounts: { seats: 8 } }));
    expect((await chargeHistory(co, a.id)).map((c) => c.amount)).toEqual([1750]);
    const fewer = await co.call('POST', `/v1/accounts/${a.id}/changeplan`, { body: { plan_id: seats.id, plan_variable_amounts: { seats: 6 } } });
    expect(fewer.status, JSON.stringify(fewer.body)).toBe(200);
    expect(fewer.body.data).toMatchObject({ plan_variable_amounts: { seats: 8 }, scheduled_plan_id: seats.id, scheduled_plan_variable_amounts: { seats: 6 } });
    // Asking for what the account has now undoes the scheduled change.
    const undo = await co.call('POST', `/v1/accounts/${a.id}/changeplan`, { body: { plan_id: seats.id, plan_variable_amounts: { seats: 8 } } });
    expect(undo.body.data).toMatchObject({ scheduled_plan_id: null, scheduled_plan_variable_amounts: null });
    const same = await co.call('POST', `/v1/accounts/${a.id}/changeplan`, { body: { plan_id: seats.id, plan_variable_amounts: { seats: 8 } } });
    expect(same.status).toBe(400);
    await co.call('POST', `/v1/accounts/${a.id}/changeplan`, { body: { plan_id: seats.id, plan_variable_amounts: { seats: 6 } } });
    expect(await balances(co, a.id)).toEqual({ seats: 8 });
    expect(await chargeHistory(co, a.id)).toHaveLength(1);
    await advanceTo(new Date(a.next_plan_renewal));
    expect((await chargeHistory(co, a.id)).map((c) => c.amount)).toEqual([1750, 1250]); // 1000 + (6 − 5) × 250
    expect(await getAccount(co, a.id)).toMatchObject({ plan_variable_amounts: { seats: 6 }, scheduled_plan_id: null, last_plan_renewal: a.next_plan_renewal });
    expect(await balances(co, a.id)).toEqual({ seats: 6 });
    // More seats is an upgrade, at once: credit for the whole unused period (none used yet).
    const more = await co.call('POST', `/v1/accounts/${a.id}/changeplan`, { body: { plan_id: seats.id, plan_variable_amounts: { seats: 10 } } });
    expect(more.status, JSON.stringify(more.body)).toBe(200);
    expect((await chargeHistory(co, a.id)).map((c) => c.amount)).toEqual([1750, 1250, 2250 - 1250]);
    expect(await balances(co, a.id)).toEqual({ seats: 10 });
    await expectLedgerMatches(t.database.db, co, a.id);
  });

  it('refuses a plan change while a renewal is unpaid', async () => {
    const a = await getAccount(co, await createAccount(co, { plan_id: seats.id, token: 'tok_visa' }));
    await co.call('POST', `/v1/accounts/${a.id}/card`, { body: { token: 'tok_chargeDeclined' } });
    await advanceTo(new Date(a.next_plan_renewal));
    expect((await getAccount(co, a.id)).plan_status).toBe('PAST_DUE');
    const r = await co.call('POST', `/v1/accounts/${a.id}/changeplan`, { body: { plan_id: seats.id, plan_variable_amounts: { seats: 9 } } });
    expect(r.status).toBe(409);
    expect(r.body.error.type).toBe('conflict');
    // Retries follow the schedule from the due date: +1, +3, +7, then weekly.
    await advanceTo(new Date(new Date(a.next_plan_renewal).getTime() + 21 * 86_400_000));
    const due = new Date(a.next_plan_renewal).getTime();
    expect((await chargeHistory(co, a.id)).slice(1).map((c) => (new Date(c.created_at).getTime() - due) / 86_400_000)).toEqual([0, 1, 3, 7, 14, 21]);
  });

  it('refuses an upgrade while a worker holds the renewal lease, and takes the lease itself', async () => {
    const a = await getAccount(co, await createAccount(co, { plan_id: seats.id, token: 'tok_visa' }));
    const db = t.database.db;
    await db.update(accounts).set({ renewalLockedUntil: new Date(now().getTime() + 60_000) }).where(eq(accounts.id, a.id));
    const r = await co.call('POST', `/v1/accounts/${a.id}/changeplan`, { body: { plan_id: seats.id, plan_variable_amounts: { seats: 7 } } });
    expect(r.status).toBe(409);
    expect(await chargeHistory(co, a.id)).toHaveLength(1);
    await db.update(accounts).set({ renewalLockedUntil: null }).where(eq(accounts.id, a.id));
    const ok = await co.call('POST', `/v1/accounts/${a.id}/changeplan`, { body: { plan_id: seats.id, plan_variable_amounts: { seats: 7 } } });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.data.plan_variable_amounts).toEqual({ seats: 7 });
    const [row] = await db.select().from(accounts).where(eq(accounts.id, a.id));
    expect(row.renewalLockedUntil).toBeNull();
  });

  it('does not fire missed retry slots back to back after a long pause', async () => {
    const { computeRenewalRetry } = await import('../catalog/periods');
    const due = at(2030, 1, 1);
    expect(computeRenewalRetry(due, 1).toISOString()).toBe(iso(2030, 1, 2));
    expect(computeRenewalRetry(due, 4).toISOString()).toBe(iso(2030, 1, 15));
    expect(computeRenewalRetry(due, 1, at(2030, 1, 20)).toISOString()).toBe(iso(2030, 1, 21));
  });
});

describe('plan threshold alerts on every usage path', () => {
  it('fires once per period from batches and completed holds, never for plans without a percentage', async () => {
    const co = await newPayingCompany(t);
    await advance(0);
    const hook = await co.call('POST', '/v1/companies/{company}/webhooks', { body: { url: 'http://127.0.0.1:9/x' } });
    expect(hook.status).toBe(200);
    await co.call('POST', `/v1/companies/{company}/webhooks/${hook.body.data.id}/subscribe/threshold`);
    const half = await createPlan(co, { name: 'Half', threshold_alert_percentage: 50, balances: [{ amount: 100, denomination: 'calls' }] });
    const silent = await createPlan(co, { name: 'Silent', balances: [{ amount: 100, denomination: 'calls' }] });
    const a = await getAccount(co, await createAccount(co, { plan_id: half.id }));
    const b = await getAccount(co, await createAccount(co, { plan_id: silent.id }));
    const count = async (accountId: string) =>
      (await t.database.db.select().from(webhookDeliveries).where(and(eq(webhookDeliveries.accountId, accountId), eq(webhookDeliveries.topic, 'threshold')))).length;
    const batch = (account: string, amount: number) =>
      co.call('POST', '/v1/events', { body: [{ account_id: account, type: 'call', cost_override: { amount, denomination: 'calls' } }] });
    expect((await batch(a.id, 49)).status).toBe(200);
    expect((await batch(b.id, 99)).status).toBe(200);
    expect(await count(a.id)).toBe(0);
    // A hold does not count as usage until it completes.
    const hold = await co.call('POST', `/v1/accounts/${a.id}/events`, { body: { type: 'call', cost_override_amount: 1, cost_override_denomination: 'calls', state: 'pending' } });
    expect(hold.status, JSON.stringify(hold.body)).toBe(200);
    expect(await count(a.id)).toBe(0);
    expect((await co.call('PUT', `/v1/events/${hold.body.data.id}`, { body: { state: 'complete' } })).status).toBe(200);
    expect(await count(a.id)).toBe(1);
    await batch(a.id, 10);
    expect(await count(a.id)).toBe(1);
    expect(await count(b.id)).toBe(0);
    const [delivery] = await t.database.db.select().from(webhookDeliveries).where(and(eq(webhookDeliveries.accountId, a.id), eq(webhookDeliveries.topic, 'threshold')));
    expect(delivery).toMatchObject({ denomination: 'calls', payload: { balance: '50', detail: { reason: 'plan_threshold', threshold_alert_percentage: '50', included_amount: '100' } } });
  });
});
