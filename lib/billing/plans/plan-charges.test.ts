process.env.BILLING_TEST_CLOCK = '1';
process.env.STRIPE_TIMEOUT_MS = '2000';

import { and, eq, sql } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { accounts, charges as chargeRows, collectorLinks, companies, portalLinks, transactions, type ChargeReason } from '../../db/schema';
import { api, newPayingCompany, useLocalStripe, useTestDatabase } from '../../testing/harness';
import { now, setTestTime } from '../../clock';
import { reconcileCharges } from '../settlement';
import { viewPortal } from '../accounts/portal';
import { computePeriodEnd } from '../catalog/periods';
import { renewDuePlans } from './renewals';
import { captureLogs } from '../../testing/log-capture';
import { charges, createAccount, createPlan, expectLedgerMatches, getAccount, spend, type PayingCo } from '../../testing/scenario';

const t = useTestDatabase();
const local = useLocalStripe();


const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const db = () => t.database.db;

// Each test renews only its own account: the clock moves on a month per test, and an earlier
// test's account falling due would take the processor failures meant for the next one.
afterEach(async () => {
  await db().update(accounts).set({ planStatus: 'CANCELLED' });
});

const subscribe = async (co: PayingCo, planId: string) =>
  (await getAccount(co, await createAccount(co, { name: 'Ada', email: 'ada@x.io', plan_id: planId, token: 'tok_visa' }))) as { id: string; next_plan_renewal: string };
const row = async (id: string) => (await db().select().from(accounts).where(eq(accounts.id, id)))[0];

/** Charges oldest first, as [reason, amount, status]. */
async function chargeLines(co: PayingCo, id: string) {
  return (await charges(co, id)).reverse().map((c) => [c.reason, c.amount, c.status]);
}

async function tokens(co: PayingCo, id: string) {
  return (await co.call('GET', `/v1/accounts/${id}/balance/tokens`)).body.data.amount as number;
}

const useTokens = (co: PayingCo, id: string, amount: number) => spend(co, id, amount, { type: 'use', denomination: 'tokens' });

/** Waits until the account's charge for `reason` is written: the processor call is under way. */
async function untilCharge(accountId: string, reason: ChargeReason) {
  for (let i = 0; i < 300; i++) {
    const [c] = await db().select().from(chargeRows).where(and(eq(chargeRows.accountId, accountId), eq(chargeRows.reason, reason)));
    if (c) return c;
    await sleep(10);
  }
  throw new Error(`no ${reason} charge for ${accountId}`);
}

async function completeIntent(id: string) {
  const res = await fetch(`${local.url}/__control/payment_intents/${id}/complete`, { method: 'POST' });
  expect(res.status).toBe(200);
}

describe('renewal charges whose outcome is unknown', () => {
  it('keep the account ACTIVE, start no second attempt, and renew once when the late payment is found', async () => {
    const co = await newPayingCompany(t);
    const pro = await createPlan(co, { name: 'Pro', charge_amount: 2000, balances: [{ amount: 1000, denomination: 'tokens' }] });
    const a = await subscribe(co, pro.id);
    const due = new Date(a.next_plan_renewal);
    setTestTime(due.getTime());
    // The renewal's payment reaches the card after we gave up waiting and after our look-up.
    await local.control('fail', { delay_ms: 3500, count: 1, path_prefix: '/v1/payment_intents', method: 'POST', late: true });
    await renewDuePlans(db(), now());
    expect(await chargeLines(co, a.id)).toEqual([
      ['plan_start', 2000, 'succeeded'],
      ['plan_renewal', 2000, 'pending'],
    ]);
    expect(await getAccount(co, a.id)).toMatchObject({ plan_status: 'ACTIVE', next_plan_renewal: a.next_plan_renewal });
    expect((await row(a.id)).renewalAttempts).toBe(0);
    // Looked at again an hour later: the charge is still pending, so no new attempt is made.
    setTestTime(due.getTime() + 3600_000);
    await renewDuePlans(db(), now());
    expect(await chargeLines(co, a.id)).toHaveLength(2);
    await local.untilPaymentIntents(co, 2);
    await reconcileCharges(db(), now());
    expect(await chargeLines(co, a.id)).toEqual([
      ['plan_start', 2000, 'succeeded'],
      ['plan_renewal', 2000, 'succeeded'],
    ]);
    expect(await getAccount(co, a.id)).toMatchObject({
      plan_status: 'ACTIVE',
      last_plan_renewal: due.toISOString(),
      next_plan_renewal: computePeriodEnd(new Date((await row(a.id)).planAnchorAt!), 'month', 2).toISOString(),
    });
    expect(await local.paymentIntents(co)).toBe(2);
    expect(await tokens(co, a.id)).toBe(1000);
  });

  it('a renewal settled by the reconciler after a run claimed the account is not charged again by that run, a period early', async () => {
    const co = await newPayingCompany(t);
    const daily = await createPlan(co, { name: 'Daily', charge_amount: 300, billing_period: 'day', overage_charge_mode: 'none', balances: [{ amount: 3, denomination: 'credits' }] });
    const late = await subscribe(co, daily.id);
    setTestTime(now().getTime() + 30 * 60_000);
    const other = await subscribe(co, daily.id);
    const due = new Date(late.next_plan_renewal);
    // The first account's renewal is paid after the service gave up waiting: pending, looked at again in an hour.
    setTestTime(due.getTime());
    await local.control('fail', { delay_ms: 3500, count: 1, path_prefix: '/v1/payment_intents', method: 'POST', late: true });
    await renewDuePlans(db(), now());
    expect(await chargeLines(co, late.id)).toEqual([
      ['plan_start', 300, 'succeeded'],
      ['plan_renewal', 300, 'pending'],
    ]);
    await local.untilPaymentIntents(co, 3);
    // An hour later a run claims both accounts (the other one's renewal first, due earlier) and
    // is held at the processor by the other's charge; meanwhile the reconciler finds the first
    // account's payment and renews its period, and a credit of the new period is used.
    setTestTime(due.getTime() + 3600_000);
    await local.control('fail', { delay_ms: 1500, count: 1, path_prefix: '/v1/payment_intents', method: 'POST' });
    const run = renewDuePlans(db(), now());
    await untilCharge(other.id, 'plan_renewal');
    await reconcileCharges(db(), now());
    const renewed = await getAccount(co, late.id);
    expect(renewed.next_plan_renewal).toBe(new Date(due.getTime() + 86_400_000).toISOString());
    await spend(co, late.id, 1);
    await run;
    // The run finds the first account no longer due: no third charge, its period and its credits stay.
    expect(await chargeLines(co, late.id)).toEqual([
      ['plan_start', 300, 'succeeded'],
      ['plan_renewal', 300, 'succeeded'],
    ]);
    expect(await getAccount(co, late.id)).toMatchObject({ plan_status: 'ACTIVE', next_plan_renewal: renewed.next_plan_renewal, last_plan_renewal: due.toISOString() });
    expect((await co.call('GET', `/v1/accounts/${late.id}/balance/credits`)).body.data.amount).toBe(2);
    expect(await chargeLines(co, other.id)).toEqual([
      ['plan_start', 300, 'succeeded'],
      ['plan_renewal', 300, 'succeeded'],
    ]);
    expect(await local.paymentIntents(co)).toBe(4);
    await expectLedgerMatches(db(), co, late.id);
  });

  it('an error that is not a payment failure leaves the account ACTIVE and the renewal is tried again later', async () => {
    const co = await newPayingCompany(t);
    const pro = await createPlan(co, { name: 'Pro', charge_amount: 1500, balances: [{ amount: 10, denomination: 'tokens' }] });
    const a = await subscribe(co, pro.id);
    const [company] = await db().select().from(companies).where(eq(companies.id, co.company.id));
    // The stored processor key cannot be read (for instance APP_SECRET was changed): not a decline.
    await db().update(companies).set({ processorKeyEnc: 'unreadable' }).where(eq(companies.id, co.company.id));
    const due = new Date(a.next_plan_renewal);
    setTestTime(due.getTime());
    const logs = captureLogs('error');
    try {
      await renewDuePlans(db(), now());
    } finally {
      logs.stop();
    }
    expect(await getAccount(co, a.id)).toMatchObject({ plan_status: 'ACTIVE', next_plan_renewal: a.next_plan_renewal });
    expect((await row(a.id)).renewalAttempts).toBe(0);
    expect(await chargeLines(co, a.id)).toHaveLength(1);
    expect(logs.lines).toContainEqual(expect.objectContaining({ level: 'error', msg: 'renewal failed; retried when its lease ends', account_id: a.id, err: expect.objectContaining({ message: expect.any(String) }) }));
    // Retried once its lease has ended, not at once in a loop.
    await db().update(companies).set({ processorKeyEnc: company.processorKeyEnc }).where(eq(companies.id, co.company.id));
    expect(await renewDuePlans(db(), now())).toBe(0);
    setTestTime(due.getTime() + 11 * 60_000);
    await renewDuePlans(db(), now());
    expect(await chargeLines(co, a.id)).toEqual([
      ['plan_start', 1500, 'succeeded'],
      ['plan_renewal', 1500, 'succeeded'],
    ]);
    expect((await getAccount(co, a.id)).last_plan_renewal).toBe(due.toISOString());
  });
});

describe('plan changes next to a renewal or an unsettled plan charge', () => {
  it('refuses an upgrade while the renewal is due and not done, and allows it once renewed', async () => {
    const co = await newPayingCompany(t);
    const pro = await createPlan(co, { name: 'Pro', charge_amount: 2000, overage_charge_mode: 'postpay', balances: [{ amount: 1000, denomination: 'tokens', overage_charge_amount: 3 }] });
    const max = await createPlan(co, { name: 'Max', charge_amount: 5000, balances: [{ amount: 5000, denomination: 'tokens' }] });
    const a = await subscribe(co, pro.id);
    await useTokens(co, a.id, 1100);
    const due = new Date(a.next_plan_renewal);
    setTestTime(due.getTime() + 1000);
    const r = await co.call('POST', `/v1/accounts/${a.id}/changeplan`, { body: { plan_id: max.id } });
    expect(r.status, JSON.stringify(r.body)).toBe(409);
    expect(r.body.error).toMatchObject({ type: 'conflict', param: 'plan_id', message: expect.stringMatching(/renewal is due/) });
    expect(await chargeLines(co, a.id)).toEqual([['plan_start', 2000, 'succeeded']]);
    await renewDuePlans(db(), now());
    // The overage was billed once, by the renewal; the upgrade bills none again.
    const ok = await co.call('POST', `/v1/accounts/${a.id}/changeplan`, { body: { plan_id: max.id } });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const list = await chargeLines(co, a.id);
    expect(list.slice(0, 2)).toEqual([
      ['plan_start', 2000, 'succeeded'],
      ['plan_renewal', 2300, 'succeeded'],
    ]);
    expect(list[2][0]).toBe('plan_change');
    expect(list[2][1]).toBeLessThanOrEqual(3000 + 1);
    expect(await tokens(co, a.id)).toBe(5000);
  });

  it('a renewal charge settled after its period has ended renews the period it was charged in, not the one under way then', async () => {
    const co = await newPayingCompany(t);
    const daily = await createPlan(co, { name: 'Daily', charge_amount: 100, billing_period: 'day', balances: [{ amount: 10, denomination: 'tokens' }] });
    const a = await subscribe(co, daily.id);
    const due = new Date(a.next_plan_renewal);
    setTestTime(due.getTime());
    await local.control('fail', { processing: true, count: 1, path_prefix: '/v1/payment_intents', method: 'POST' });
    await renewDuePlans(db(), now());
    const pending = await untilCharge(a.id, 'plan_renewal');
    expect(pending.status).toBe('pending');
    // The processor's answer comes a day and a bit later.
    await completeIntent(pending.processorPaymentIntentId!);
    setTestTime(due.getTime() + 86_400_000 + 3_600_000);
    await reconcileCharges(db(), now());
    // Paid for [due, due + 1 day): that period is renewed, and the next one is due (and charged) now.
    const after = await getAccount(co, a.id);
    expect(after.last_plan_renewal).toBe(due.toISOString());
    expect(after.next_plan_renewal).toBe(new Date(due.getTime() + 86_400_000).toISOString());
    await renewDuePlans(db(), now());
    expect((await chargeLines(co, a.id)).map((c) => [c[0], c[1], c[2]])).toEqual([
      ['plan_start', 100, 'succeeded'],
      ['plan_renewal', 100, 'succeeded'],
      ['plan_renewal', 100, 'succeeded'],
    ]);
    expect((await getAccount(co, a.id)).last_plan_renewal).toBe(new Date(due.getTime() + 86_400_000).toISOString());
  });

  it('a renewal claimed by a run whose time fell behind still holds its lease from the claim: another run does not take it', async () => {
    const co = await newPayingCompany(t);
    const pro = await createPlan(co, { name: 'Pro', charge_amount: 2000, balances: [{ amount: 1000, denomination: 'tokens' }] });
    const a = await subscribe(co, pro.id);
    const due = new Date(a.next_plan_renewal);
    setTestTime(due.getTime() + 15 * 60_000);
    // A run that started 15 minutes ago (its rounds took that long) claims the renewal; the processor is slow.
    await local.control('fail', { delay_ms: 1500, count: 1, path_prefix: '/v1/payment_intents', method: 'POST' });
    const behind = renewDuePlans(db(), due);
    await untilCharge(a.id, 'plan_renewal');
    expect(await renewDuePlans(db(), now())).toBe(0);
    expect(await behind).toBe(1);
    expect((await chargeLines(co, a.id)).map((c) => [c[0], c[2]])).toEqual([
      ['plan_start', 'succeeded'],
      ['plan_renewal', 'succeeded'],
    ]);
  });

  it('refuses a change while a renewal charge is pending; the renewal then completes and the change follows', async () => {
    const co = await newPayingCompany(t);
    const pro = await createPlan(co, { name: 'Pro', charge_amount: 2000, balances: [{ amount: 1000, denomination: 'tokens' }] });
    const max = await createPlan(co, { name: 'Max', charge_amount: 5000, balances: [{ amount: 5000, denomination: 'tokens' }] });
    const basic = await createPlan(co, { name: 'Basic', charge_amount: 500, balances: [{ amount: 100, denomination: 'tokens' }] });
    const a = await subscribe(co, pro.id);
    const due = new Date(a.next_plan_renewal);
    setTestTime(due.getTime());
    await local.control('fail', { processing: true, count: 1, path_prefix: '/v1/payment_intents', method: 'POST' });
    await renewDuePlans(db(), now());
    const pending = await untilCharge(a.id, 'plan_renewal');
    expect(pending.status).toBe('pending');
    // Neither an upgrade nor a downgrade (which the pending renewal would silently drop).
    for (const planId of [max.id, basic.id]) {
      const r = await co.call('POST', `/v1/accounts/${a.id}/changeplan`, { body: { plan_id: planId } });
      expect(r.status, JSON.stringify(r.body)).toBe(409);
    }
    expect(await getAccount(co, a.id)).toMatchObject({ plan_id: pro.id, scheduled_plan_id: null });
    await completeIntent(pending.processorPaymentIntentId!);
    setTestTime(due.getTime() + 120_000);
    await reconcileCharges(db(), now());
    expect((await getAccount(co, a.id)).last_plan_renewal).toBe(due.toISOString());
    const ok = await co.call('POST', `/v1/accounts/${a.id}/changeplan`, { body: { plan_id: max.id } });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect((await chargeLines(co, a.id)).map((c) => [c[0], c[2]])).toEqual([
      ['plan_start', 'succeeded'],
      ['plan_renewal', 'succeeded'],
      ['plan_change', 'succeeded'],
    ]);
    expect(await local.paymentIntents(co)).toBe(3);
  });

  it('refuses to start a plan again while the first plan charge of the account is pending', async () => {
    const co = await newPayingCompany(t);
    const pro = await createPlan(co, { name: 'Pro', charge_amount: 2000, balances: [{ amount: 1000, denomination: 'tokens' }] });
    await local.control('fail', { processing: true, count: 1, path_prefix: '/v1/payment_intents', method: 'POST' });
    const first = await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Ada', email: 'ada@x.io', plan_id: pro.id, token: 'tok_visa' } });
    expect(first.status).toBe(502);
    const id = first.body.error.account_id;
    expect(await getAccount(co, id)).toMatchObject({ plan_status: 'NONE' });
    const again = await co.call('POST', `/v1/accounts/${id}/changeplan`, { body: { plan_id: pro.id } });
    expect(again.status, JSON.stringify(again.body)).toBe(409);
    expect(await local.paymentIntents(co)).toBe(1);
    const pending = await untilCharge(id, 'plan_start');
    await completeIntent(pending.processorPaymentIntentId!);
    setTestTime(now().getTime() + 120_000);
    await reconcileCharges(db(), now());
    expect(await getAccount(co, id)).toMatchObject({ plan_status: 'ACTIVE', plan_id: pro.id });
    expect(await chargeLines(co, id)).toEqual([['plan_start', 2000, 'succeeded']]);
  });

  it('changing a waiting plan waits for a card being saved to start it: 409 with Retry-After while its lease is held', async () => {
    const co = await newPayingCompany(t);
    const pro = await createPlan(co, { name: 'Pro', charge_amount: 2500, balances: [{ amount: 1000, denomination: 'tokens' }] });
    const max = await createPlan(co, { name: 'Max', charge_amount: 5000, balances: [{ amount: 5000, denomination: 'tokens' }] });
    const created = await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Ada', email: 'ada@x.io', plan_id: pro.id, enable_card_collector: true } });
    expect(created.status).toBe(200);
    const id = created.body.data.id as string;
    // A card being saved through the collector holds the account's lease while it starts the plan.
    await db().update(accounts).set({ renewalLockedUntil: new Date(now().getTime() + 60_000) }).where(eq(accounts.id, id));
    const busy = await co.call('POST', `/v1/accounts/${id}/changeplan`, { body: { plan_id: max.id } });
    expect(busy.status, JSON.stringify(busy.body)).toBe(409);
    expect(busy.headers.get('retry-after')).toBe('1');
    expect(await getAccount(co, id)).toMatchObject({ plan_id: pro.id, plan_status: 'PENDING_PAYMENT_METHOD' });
    // Once it is done (here: given back without starting), the change goes through.
    await db().update(accounts).set({ renewalLockedUntil: null }).where(eq(accounts.id, id));
    const changed = await co.call('POST', `/v1/accounts/${id}/changeplan`, { body: { plan_id: max.id } });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    expect(await getAccount(co, id)).toMatchObject({ plan_id: max.id, plan_status: 'PENDING_PAYMENT_METHOD' });
    expect((await row(id)).renewalLockedUntil).toBeNull();
  });

  it('while a collector card is being charged for the waiting plan: a second link does not charge again, and changeplan is 409', async () => {
    const co = await newPayingCompany(t);
    const pro = await createPlan(co, { name: 'Pro', charge_amount: 2500, balances: [{ amount: 1000, denomination: 'tokens' }] });
    const max = await createPlan(co, { name: 'Max', charge_amount: 5000, balances: [{ amount: 5000, denomination: 'tokens' }] });
    const created = await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Ada', email: 'ada@x.io', plan_id: pro.id, enable_card_collector: true } });
    expect(created.status).toBe(200);
    const id = created.body.data.id as string;
    const submit = (url: string, token: string, n: number) =>
      api('POST', `${new URL(url).pathname}/submit`, { body: { token }, headers: { 'x-forwarded-for': `198.51.100.${200 + n}` } });
    await local.control('fail', { processing: true, count: 1, path_prefix: '/v1/payment_intents', method: 'POST' });
    const first = await submit(created.body.data.card_collector_url, 'tok_visa', 1);
    expect(first.status, JSON.stringify(first.body)).toBe(502);
    expect(first.body.error.charge_pending).toBe(true);
    const pending = await untilCharge(id, 'plan_start');

    const second = (await co.call('POST', `/v1/accounts/${id}/card_collector`)).body.data.card_collector_url as string;
    const again = await submit(second, 'tok_mastercard', 2);
    expect(again.status, JSON.stringify(again.body)).toBe(502);
    expect(again.body.error).toMatchObject({ charge_pending: true, charge_id: pending.id });
    for (const path of [`/v1/accounts/${id}/changeplan/preview`, `/v1/accounts/${id}/changeplan`]) {
      const change = await co.call('POST', path, { body: { plan_id: max.id } });
      expect(change.status, `${path} ${JSON.stringify(change.body)}`).toBe(409);
    }
    expect(await local.paymentIntents(co)).toBe(1);
    expect(await getAccount(co, id)).toMatchObject({ plan_id: pro.id, plan_status: 'PENDING_PAYMENT_METHOD' });

    await completeIntent(pending.processorPaymentIntentId!);
    setTestTime(now().getTime() + 120_000);
    await reconcileCharges(db(), now());
    expect(await getAccount(co, id)).toMatchObject({ plan_status: 'ACTIVE', plan_id: pro.id });
    expect(await chargeLines(co, id)).toEqual([['plan_start', 2500, 'succeeded']]);
    expect(await local.paymentIntents(co)).toBe(1);
    expect(await tokens(co, id)).toBe(1000);
  });
});

describe('usage while a plan charge is at the processor', () => {
  it('counts against the renewed period (and the billed overage is not lost either)', async () => {
    const co = await newPayingCompany(t);
    const pro = await createPlan(co, { name: 'Pro', charge_amount: 2000, overage_charge_mode: 'postpay', balances: [{ amount: 1000, denomination: 'tokens', overage_charge_amount: 3 }] });
    const a = await subscribe(co, pro.id);
    await useTokens(co, a.id, 1100);
    setTestTime(new Date(a.next_plan_renewal).getTime());
    await local.control('fail', { delay_ms: 1000, count: 1, path_prefix: '/v1/payment_intents', method: 'POST' });
    const renewing = renewDuePlans(db(), now());
    await untilCharge(a.id, 'plan_renewal');
    await useTokens(co, a.id, 50); // lands while the processor holds the renewal charge
    await renewing;
    expect(await chargeLines(co, a.id)).toEqual([
      ['plan_start', 2000, 'succeeded'],
      ['plan_renewal', 2300, 'succeeded'],
    ]);
    expect(await tokens(co, a.id)).toBe(950);
    await expectLedgerMatches(db(), co, a.id);
  });

  it('draws from the old plan\'s allowance while an upgrade is at the processor; the new allowance is granted whole', async () => {
    const co = await newPayingCompany(t);
    const pro = await createPlan(co, { name: 'Pro', charge_amount: 2000, balances: [{ amount: 1000, denomination: 'tokens' }] });
    const max = await createPlan(co, { name: 'Max', charge_amount: 5000, balances: [{ amount: 5000, denomination: 'tokens' }] });
    const a = await subscribe(co, pro.id);
    await useTokens(co, a.id, 200);
    await local.control('fail', { delay_ms: 1000, count: 1, path_prefix: '/v1/payment_intents', method: 'POST' });
    const upgrading = co.call('POST', `/v1/accounts/${a.id}/changeplan`, { body: { plan_id: max.id } });
    await untilCharge(a.id, 'plan_change');
    await useTokens(co, a.id, 30);
    const r = await upgrading;
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.plan_id).toBe(max.id);
    // The 30 were drawn from Pro's allowance, still live until Max's period started; what was
    // left of it (770) expired then.
    expect(await tokens(co, a.id)).toBe(5000);
    const ledger = (await co.call('GET', `/v1/accounts/${a.id}/transactions?limit=100`)).body.data as { type: string; amount: number }[];
    expect(ledger.filter((l) => l.type === 'expire').map((l) => l.amount)).toEqual([-770]);
    await expectLedgerMatches(db(), co, a.id);
  });
});

describe('retrying a plan request with the same Idempotency-Key', () => {
  it('account creation carries on with the account and charge of its first attempt', async () => {
    const co = await newPayingCompany(t);
    const pro = await createPlan(co, { name: 'Pro', charge_amount: 2500, balances: [{ amount: 1000, denomination: 'tokens' }] });
    // The payment is made but its answer is lost, and the look-up fails too.
    await local.control('fail', { status: 500, count: 1, path_prefix: '/v1/payment_intents', method: 'POST', after: true });
    await local.control('fail', { status: 500, count: 1, path_prefix: '/v1/payment_intents', method: 'GET' });
    const body = { name: 'Ada', email: 'ada@x.io', plan_id: pro.id, token: 'tok_visa' };
    const headers = { 'Idempotency-Key': 'create-ada' };
    const first = await co.call('POST', '/v1/companies/{company}/accounts', { body, headers });
    expect(first.status).toBe(502);
    expect(first.body.error).toMatchObject({ type: 'processor_error', charge_pending: true, account_id: expect.stringMatching(/^a_/) });
    const retry = await co.call('POST', '/v1/companies/{company}/accounts', { body, headers });
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    expect(retry.body.data).toMatchObject({ id: first.body.error.account_id, plan_status: 'ACTIVE', plan_id: pro.id });
    expect((await co.call('GET', '/v1/companies/{company}/accounts')).body.data).toHaveLength(1);
    expect(await chargeLines(co, retry.body.data.id)).toEqual([['plan_start', 2500, 'succeeded']]);
    expect(await tokens(co, retry.body.data.id)).toBe(1000);
    expect(await local.paymentIntents(co)).toBe(1);
  });

  /**
   * An account creation whose first attempt left its plan charge unknown (the request never reached
   * the processor, and the look-up failed), with a card the processor declines once it is asked.
   */
  async function pendingCreation(key: string) {
    const co = await newPayingCompany(t);
    const pro = await createPlan(co, { name: 'Pro', charge_amount: 2500, balances: [{ amount: 1000, denomination: 'tokens' }] });
    await local.control('fail', { status: 500, count: 1, path_prefix: '/v1/payment_intents', method: 'POST' });
    await local.control('fail', { status: 500, count: 1, path_prefix: '/v1/payment_intents', method: 'GET' });
    const body = { name: 'Ada', email: 'ada@x.io', plan_id: pro.id, token: 'tok_chargeCustomerFail' };
    const headers = { 'Idempotency-Key': key };
    const first = await co.call('POST', '/v1/companies/{company}/accounts', { body, headers });
    expect(first.status, JSON.stringify(first.body)).toBe(502);
    const id = first.body.error.account_id as string;
    const retry = () => co.call('POST', '/v1/companies/{company}/accounts', { body, headers });
    return { co, id, retry };
  }

  it('account creation refused on a retry takes back the account with the links minted for it meanwhile', async () => {
    const { co, id, retry: again } = await pendingCreation('create-ada-links');
    expect((await co.call('GET', `/v1/accounts/${id}`)).status, 'kept while pending').toBe(200);
    // The company sends its customer a way to look at the account meanwhile.
    expect((await co.call('POST', `/v1/accounts/${id}/portal_link`)).status).toBe(200);
    expect((await co.call('POST', `/v1/accounts/${id}/card_collector`)).status).toBe(200);
    // The retry reaches the processor, which declines: the creation is refused, and nothing of it stays.
    const retry = await again();
    expect(retry.status, JSON.stringify(retry.body)).toBe(402);
    expect(retry.body.error).toMatchObject({ type: 'card_declined' });
    expect((await co.call('GET', `/v1/accounts/${id}`)).status).toBe(404);
    expect((await db().select().from(chargeRows).where(eq(chargeRows.accountId, id))).map((c) => [c.reason, c.status])).toEqual([['plan_start', 'failed']]);
    expect(await db().select().from(portalLinks).where(eq(portalLinks.accountId, id))).toEqual([]);
    expect(await db().select().from(collectorLinks).where(eq(collectorLinks.accountId, id))).toEqual([]);
    // And the same key answers the same again.
    expect((await again()).status).toBe(402);
  });

  it('account creation refused on a retry keeps an account the company deposited on meanwhile, without the plan', async () => {
    const { co, id, retry: again } = await pendingCreation('create-ada-deposit');
    const deposit = await co.call('POST', `/v1/accounts/${id}/deposit`, { body: { denomination: 'credits', amount_to_deposit: 5 } });
    expect(deposit.status, JSON.stringify(deposit.body)).toBe(200);
    const portal = await co.call('POST', `/v1/accounts/${id}/portal_link`);
    expect(portal.status).toBe(200);
    const retry = await again();
    expect(retry.status, JSON.stringify(retry.body)).toBe(402);
    expect(await getAccount(co, id)).toMatchObject({ id, plan_id: null, plan_status: 'NONE' });
    // The link the customer was sent still shows the account.
    expect('view' in (await viewPortal({ db: db(), token: new URL(portal.body.data.url).pathname.split('/').pop()! }))).toBe(true);
    expect((await co.call('GET', `/v1/accounts/${id}/balance/credits`)).body.data.amount).toBe(5);
    await expectLedgerMatches(db(), co, id);
    expect((await again()).status).toBe(402);
  });

  it('account creation keeps an account whose plan charge was paid when recording it failed, and a retry settles it', async () => {
    const co = await newPayingCompany(t);
    const pro = await createPlan(co, { name: 'Pro', charge_amount: 2500, balances: [{ amount: 1000, denomination: 'tokens' }] });
    // The payment succeeds, and the transaction that records it fails (a connection lost, a deadlock).
    await db().execute(sql`create or replace function billing_test_fail_grant() returns trigger language plpgsql as $$
      begin raise exception 'injected failure while settling'; end $$`);
    await db().execute(sql`create trigger billing_test_fail_grant before insert on transactions for each row execute function billing_test_fail_grant()`);
    const body = { name: 'Ada', email: 'ada@x.io', plan_id: pro.id, token: 'tok_visa' };
    const headers = { 'Idempotency-Key': 'create-ada-settle' };
    let first;
    try {
      first = await co.call('POST', '/v1/companies/{company}/accounts', { body, headers });
    } finally {
      await db().execute(sql`drop trigger billing_test_fail_grant on transactions`);
    }
    expect(first.status, JSON.stringify(first.body)).toBe(502);
    expect(first.body.error).toMatchObject({ type: 'processor_error', charge_pending: true, account_id: expect.stringMatching(/^a_/) });
    expect(await local.paymentIntents(co)).toBe(1);
    // Kept: the paid charge has its account; the retry carries on with both.
    const retry = await co.call('POST', '/v1/companies/{company}/accounts', { body, headers });
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    expect(retry.body.data).toMatchObject({ id: first.body.error.account_id, plan_status: 'ACTIVE', plan_id: pro.id });
    expect(await chargeLines(co, retry.body.data.id)).toEqual([['plan_start', 2500, 'succeeded']]);
    expect(await tokens(co, retry.body.data.id)).toBe(1000);
    expect(await local.paymentIntents(co)).toBe(1);
  });

  it('an upgrade carries on with its first charge instead of charging again', async () => {
    const co = await newPayingCompany(t);
    const pro = await createPlan(co, { name: 'Pro', charge_amount: 2000, balances: [{ amount: 1000, denomination: 'tokens' }] });
    const max = await createPlan(co, { name: 'Max', charge_amount: 5000, balances: [{ amount: 5000, denomination: 'tokens' }] });
    const a = await subscribe(co, pro.id);
    await local.control('fail', { status: 500, count: 1, path_prefix: '/v1/payment_intents', method: 'POST', after: true });
    await local.control('fail', { status: 500, count: 1, path_prefix: '/v1/payment_intents', method: 'GET' });
    const headers = { 'Idempotency-Key': 'upgrade-ada' };
    const first = await co.call('POST', `/v1/accounts/${a.id}/changeplan`, { body: { plan_id: max.id }, headers });
    expect(first.status).toBe(502);
    expect(first.body.error.charge_pending).toBe(true);
    const retry = await co.call('POST', `/v1/accounts/${a.id}/changeplan`, { body: { plan_id: max.id }, headers });
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    expect(retry.body.data.plan_id).toBe(max.id);
    expect((await chargeLines(co, a.id)).map((c) => [c[0], c[2]])).toEqual([
      ['plan_start', 'succeeded'],
      ['plan_change', 'succeeded'],
    ]);
    expect(await local.paymentIntents(co)).toBe(2);
    expect(await tokens(co, a.id)).toBe(5000);
  });
});

describe('concurrent changeplan calls onto a paid plan from no plan', () => {
  it('charge once and start one period, however many arrive together', async () => {
    const co = await newPayingCompany(t);
    const pro = await createPlan(co, { name: 'Pro', charge_amount: 2000, balances: [{ amount: 1000, denomination: 'tokens' }] });
    const created = await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Ada', email: 'ada@x.io', token: 'tok_visa' } });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.data.id as string;
    expect(created.body.data.plan_status).toBe('NONE');

    const answers = await Promise.all(Array.from({ length: 12 }, () => co.call('POST', `/v1/accounts/${id}/changeplan`, { body: { plan_id: pro.id } })));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 200), statuses.join()).toHaveLength(1);
    // The others were refused while the first held the account, or came after it and found the plan on.
    for (const r of answers.filter((a) => a.status !== 200)) {
      expect([409, 400], JSON.stringify(r.body)).toContain(r.status);
      expect(r.body.error.param).toBe('plan_id');
    }
    expect(await chargeLines(co, id)).toEqual([['plan_start', 2000, 'succeeded']]);
    expect(await local.paymentIntents(co)).toBe(1);
    const grants = await db().select().from(transactions).where(and(eq(transactions.accountId, id), eq(transactions.type, 'plan_grant')));
    expect(grants.map((g) => [g.denomination, g.amount])).toEqual([['tokens', '1000']]);
    expect(await getAccount(co, id)).toMatchObject({ plan_status: 'ACTIVE', plan_id: pro.id });
    expect(await tokens(co, id)).toBe(1000);
    expect((await row(id)).renewalLockedUntil).toBeNull();
    await expectLedgerMatches(db(), co, id);
  });
});

describe('concurrent upgrades of one account', () => {
  it('charge the difference once', async () => {
    const co = await newPayingCompany(t);
    const pro = await createPlan(co, { name: 'Pro', charge_amount: 2000, balances: [{ amount: 1000, denomination: 'tokens' }] });
    const max = await createPlan(co, { name: 'Max', charge_amount: 5000, balances: [{ amount: 5000, denomination: 'tokens' }] });
    const a = await subscribe(co, pro.id);
    const answers = await Promise.all(Array.from({ length: 12 }, () => co.call('POST', `/v1/accounts/${a.id}/changeplan`, { body: { plan_id: max.id } })));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 200), statuses.join()).toHaveLength(1);
    for (const r of answers.filter((x) => x.status !== 200)) expect([409, 400], JSON.stringify(r.body)).toContain(r.status);
    expect((await chargeLines(co, a.id)).map((c) => [c[0], c[2]])).toEqual([
      ['plan_start', 'succeeded'],
      ['plan_change', 'succeeded'],
    ]);
    expect(await local.paymentIntents(co)).toBe(2);
    expect(await tokens(co, a.id)).toBe(5000);
    await expectLedgerMatches(db(), co, a.id);
  });
});
