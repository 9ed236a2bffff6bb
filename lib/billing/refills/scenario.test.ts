import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newPayingCompany, useLocalStripe, useTestDatabase } from '../../testing/harness';
import { now, setTestTime } from '../../clock';
import { encrypt } from '../../crypto';
import { query, sql } from '../../db/client';
import { balances, webhooks, webhookSubscriptions } from '../../db/schema';
import { REFILLS_OFF } from './refill-decision';
import { newId } from '../../ids';
import { Decimal } from '../../money';
import { advanceTo, balance, charges, createAccount, ledger, spend, type LedgerRow, type PayingCo } from '../../testing/scenario';
import { startReceiver, type Receiver } from '../../testing/webhook-receiver';

process.env.BILLING_TEST_CLOCK = '1';
process.env.ADMIN_TOKEN = 'admin-secret-for-tests';
// These scenarios count every notification over many months: none may be purged meanwhile.
process.env.WEBHOOK_LOG_RETENTION_DAYS = '3650';

const t = useTestDatabase();
const local = useLocalStripe();


// One timeline for the whole file (the test clock only moves forward); each scenario moves it
// to its own known start date. Every check is per account, and a scenario's accounts stop
// refilling once it is done (endRefillsAfterwards).
const at = (y: number, m: number, d: number, h = 0, min = 0, s = 0) => Date.UTC(y, m - 1, d, h, min, s);
const iso = (ms: number) => new Date(ms).toISOString();

const runWorker = () => advanceTo(now().getTime());

// This file reads charges and ledger rows in the order they happened.
const chargesOldestFirst = async (co: PayingCo, id: string) => (await charges(co, id)).reverse();
const ledgerOldestFirst = async (co: PayingCo, id: string) => (await ledger(co, id)).reverse();
/** Every balance equals the sum of its ledger rows. */
const expectLedgerAddsUp = async (co: PayingCo, id: string) => {
  const sum = (await ledger(co, id)).reduce((acc, r) => acc.plus(r.amount), new Decimal(0));
  expect(sum.toNumber()).toBe((await balance(co, id)).amount);
};
const setMonthly = async (co: PayingCo, id: string, amount: number, usd: number) => {
  const r = await co.call('PUT', `/v1/accounts/${id}/balance/credits/auto_refill`, { body: { amount, usd_charge: usd, refill_period: 'monthly' } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data;
};

// A receiver that accepts every delivery, so the outbox drains without retries.
// One for the whole file: what an earlier scenario queued may still go out while later tests run.
let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
  setTestTime(at(2027, 1, 15, 10));
  await runWorker();
});
afterAll(async () => {
  await receiver.close();
});

/**
 * Called in a scenario (describe) of its own: once its tests are done, every refill is turned off
 * as DELETE .../auto_refill does (REFILLS_OFF). The clock moves on by years in this file, and the
 * monthly refills of the scenarios before would otherwise go on all along, each charged and
 * notified, work that no later test looks at.
 */
function endRefillsAfterwards() {
  afterAll(async () => {
    await t.database.db.update(balances).set(REFILLS_OFF);
  });
}

/** Subscribes a fresh webhook of the company to the refill topics, straight in the database. */
async function subscribeRefillTopics(co: PayingCo) {
  const db = t.database.db;
  const id = newId('w');
  const created = now();
  await db.insert(webhooks).values({ id, companyId: co.company.id, url: receiver.url, secretEnc: encrypt(`whsec_${randomBytes(32).toString('base64')}`), style: 'topic', createdAt: created, updatedAt: created });
  await db.insert(webhookSubscriptions).values((['refill_failed', 'auto_refill'] as const).map((topic) => ({ webhookId: id, companyId: co.company.id, topic, createdAt: created })));
}
/** How many deliveries the account's changes queued, by topic. */
async function deliveryCounts(accountId: string): Promise<Record<string, number>> {
  const rows = await query<{ topic: string; n: string | number }>(
    t.database.db,
    sql`select topic, count(*) as n from webhook_deliveries where account_id = ${accountId} group by topic`,
  );
  return Object.fromEntries(rows.map((r) => [r.topic, Number(r.n)]));
}

describe('a year of monthly refills set on the 15th', () => {
  endRefillsAfterwards();
  it('refills at once, then at 00:00 UTC on the 15th of every month: 13 charges, 13 ledger rows', async () => {
    const co = await newPayingCompany(t);
    const a = await createAccount(co, { token: 'tok_visa' });
    const set = await setMonthly(co, a, 1000, 4900);
    expect(set).toMatchObject({
      amount: 1000,
      refill_amount: 1000,
      refill_usd_amount: 4900,
      refill_on_day: '15',
      last_periodic_refill: iso(at(2027, 1, 15, 10)),
      next_periodic_refill: iso(at(2027, 2, 15)),
    });

    // A refill adds its units to what is left; it does not top up to a level.
    await spend(co, a, 250);
    await advanceTo(at(2027, 2, 14, 23, 59, 59));
    expect(await chargesOldestFirst(co, a)).toHaveLength(1);
    expect((await balance(co, a)).amount).toBe(750);
    await advanceTo(at(2027, 2, 15));
    expect(await chargesOldestFirst(co, a)).toHaveLength(2);
    expect(await balance(co, a)).toMatchObject({ amount: 1750, last_periodic_refill: iso(at(2027, 2, 15)), next_periodic_refill: iso(at(2027, 3, 15)) });

    await advanceTo(at(2028, 1, 15, 1));
    const list = await chargesOldestFirst(co, a);
    expect(list).toHaveLength(13);
    for (const c of list) expect(c).toMatchObject({ amount: 4900, status: 'succeeded', reason: 'refill_monthly' });
    const due = [at(2027, 1, 15, 10), ...Array.from({ length: 12 }, (_, i) => at(2027, 2 + i, 15))].map(iso);
    expect(list.map((c) => c.created_at)).toEqual(due);

    const refills = (await ledgerOldestFirst(co, a)).filter((r) => r.type === 'refill');
    expect(refills).toHaveLength(13);
    expect(refills.map((r) => r.amount)).toEqual(Array(13).fill(1000));
    expect(refills.map((r) => r.charge_id)).toEqual(list.map((c) => c.id));
    expect(refills.map((r) => r.created_at)).toEqual(due);
    expect(await balance(co, a)).toMatchObject({
      amount: 13 * 1000 - 250,
      refill_amount: 1000,
      refill_usd_amount: 4900,
      refill_on_day: '15',
      last_periodic_refill: iso(at(2028, 1, 15)),
      next_periodic_refill: iso(at(2028, 2, 15)),
    });
    const processor = (await local.control(`state?key=${co.processorKey}`)).account;
    expect(processor.payment_intents).toBe(13);
    await expectLedgerAddsUp(co, a);
  });
});

describe('a year of monthly refills set on the 30th', () => {
  endRefillsAfterwards();
  it('refills at once, then on the 1st of the second following month and every 1st after', async () => {
    await advanceTo(at(2028, 1, 30, 10));
    const co = await newPayingCompany(t);
    const a = await createAccount(co, { token: 'tok_visa' });
    const set = await setMonthly(co, a, 40, 1200);
    expect(set).toMatchObject({ amount: 40, refill_on_day: '1', last_periodic_refill: iso(at(2028, 1, 30, 10)), next_periodic_refill: iso(at(2028, 3, 1)) });

    // Nothing on February 1st, nor on the last day of February (a leap year).
    await advanceTo(at(2028, 2, 29, 23, 59, 59));
    expect(await chargesOldestFirst(co, a)).toHaveLength(1);
    await advanceTo(at(2028, 3, 1));
    expect(await chargesOldestFirst(co, a)).toHaveLength(2);
    expect(await balance(co, a)).toMatchObject({ amount: 80, refill_on_day: '1', next_periodic_refill: iso(at(2028, 4, 1)) });

    await advanceTo(at(2029, 2, 1, 1));
    const list = await chargesOldestFirst(co, a);
    const due = [at(2028, 1, 30, 10), ...Array.from({ length: 12 }, (_, i) => at(2028, 3 + i, 1))].map(iso);
    expect(list.map((c) => c.created_at)).toEqual(due);
    expect(list.every((c) => c.amount === 1200 && c.status === 'succeeded')).toBe(true);
    expect((await ledgerOldestFirst(co, a)).filter((r) => r.type === 'refill').map((r) => r.created_at)).toEqual(due);
    expect(await balance(co, a)).toMatchObject({ amount: 13 * 40, refill_on_day: '1', last_periodic_refill: iso(at(2029, 2, 1)), next_periodic_refill: iso(at(2029, 3, 1)) });
  });
});

describe('threshold refills', () => {
  endRefillsAfterwards();
  it('100 concurrent events crossing the threshold make exactly one refill, charged by the worker', async () => {
    const co = await newPayingCompany(t);
    const a = await createAccount(co, { token: 'tok_visa' });
    await co.call('POST', `/v1/accounts/${a}/balance/credits`, { body: { amount: 50 } });
    const set = await co.call('PUT', `/v1/accounts/${a}/balance/credits/auto_refill`, { body: { amount: 100, usd_charge: 1000, threshold: 20 } });
    expect(set.body.data).toMatchObject({ amount: 50, refill_threshold: 20, refill_amount: 100, refill_usd_amount: 1000 });

    const results = await Promise.all(Array.from({ length: 100 }, () => co.call('POST', `/v1/accounts/${a}/events`, { body: { type: 'query', cost_override_amount: 1, cost_override_denomination: 'credits' } })));
    expect(results.map((r) => r.status)).toEqual(Array(100).fill(200));
    expect((await balance(co, a)).amount).toBe(-50);
    // Queued inside the event transactions, charged only after commit by the worker.
    expect(await chargesOldestFirst(co, a)).toHaveLength(0);
    const [queued] = await query<{ n: string | number }>(t.database.db, sql`select count(*) as n from jobs where kind = 'threshold_refill' and payload->>'balance_id' = ${set.body.data.id}`);
    expect(Number(queued.n)).toBe(1);

    await runWorker();
    expect(await chargesOldestFirst(co, a)).toMatchObject([{ amount: 1000, status: 'succeeded', reason: 'refill_threshold' }]);
    expect((await ledgerOldestFirst(co, a)).filter((r) => r.type === 'refill_threshold').map((r) => r.amount)).toEqual([100]);
    expect((await balance(co, a)).amount).toBe(50);
    await runWorker();
    expect(await chargesOldestFirst(co, a)).toHaveLength(1);

    // Above the threshold again; the next crossing is another refill.
    await Promise.all(Array.from({ length: 10 }, () => spend(co, a, 3.1)));
    expect((await balance(co, a)).amount).toBe(19);
    await runWorker();
    expect((await chargesOldestFirst(co, a)).map((c) => c.reason)).toEqual(['refill_threshold', 'refill_threshold']);
    expect((await ledgerOldestFirst(co, a)).filter((r) => r.type === 'refill_threshold')).toHaveLength(2);
    expect((await balance(co, a)).amount).toBe(119);
    expect((await local.control(`state?key=${co.processorKey}`)).account.payment_intents).toBe(2);
    await expectLedgerAddsUp(co, a);
  });

  it('events staying below the threshold after a refill do not refill again', async () => {
    const co = await newPayingCompany(t);
    const a = await createAccount(co, { token: 'tok_visa' });
    await co.call('POST', `/v1/accounts/${a}/balance/credits`, { body: { amount: 30 } });
    await co.call('PUT', `/v1/accounts/${a}/balance/credits/auto_refill`, { body: { amount: 10, usd_charge: 100, threshold: 20 } });
    await spend(co, a, 25); // 5: below
    await runWorker(); // refill: 15, still below
    await spend(co, a, 1);
    await spend(co, a, 1);
    await runWorker();
    expect(await chargesOldestFirst(co, a)).toHaveLength(1);
    expect((await balance(co, a)).amount).toBe(13);
  });
});

describe('declined cards and notifications', () => {
  endRefillsAfterwards();
  it('a declined threshold refill records a failed charge, grants nothing and queues refill_failed', async () => {
    const co = await newPayingCompany(t);
    await subscribeRefillTopics(co);
    const a = await createAccount(co, { token: 'tok_chargeDeclined' });
    await co.call('POST', `/v1/accounts/${a}/balance/credits`, { body: { amount: 50 } });
    await co.call('PUT', `/v1/accounts/${a}/balance/credits/auto_refill`, { body: { amount: 100, usd_charge: 1000, threshold: 20 } });
    await spend(co, a, 40);
    await runWorker();
    expect(await chargesOldestFirst(co, a)).toMatchObject([{ amount: 1000, status: 'failed', reason: 'refill_threshold' }]);
    expect((await balance(co, a)).amount).toBe(10);
    expect((await ledgerOldestFirst(co, a)).filter((r) => r.type.startsWith('refill'))).toHaveLength(0);
    expect(await deliveryCounts(a)).toEqual({ refill_failed: 1 });
    // Still below: no retry storm from further events.
    await spend(co, a, 1);
    await runWorker();
    expect(await chargesOldestFirst(co, a)).toHaveLength(1);
  });

  it('a declined monthly refill fails at its due time; the schedule goes on and the next success queues auto_refill', async () => {
    await advanceTo(at(2029, 2, 3, 10));
    const co = await newPayingCompany(t);
    await subscribeRefillTopics(co);
    const a = await createAccount(co, { token: 'tok_visa' });
    await setMonthly(co, a, 100, 1500);
    expect(await deliveryCounts(a)).toEqual({ auto_refill: 1 });

    expect((await co.call('POST', `/v1/accounts/${a}/card`, { body: { token: 'tok_chargeDeclined' } })).status).toBe(200);
    await advanceTo(at(2029, 3, 3, 1));
    expect((await chargesOldestFirst(co, a)).map((c) => [c.amount, c.status])).toEqual([[1500, 'succeeded'], [1500, 'failed']]);
    expect(await balance(co, a)).toMatchObject({ amount: 100, last_periodic_refill: iso(at(2029, 2, 3, 10)), next_periodic_refill: iso(at(2029, 4, 3)) });
    expect((await ledgerOldestFirst(co, a)).map((r) => r.type)).toEqual(['refill']);
    expect(await deliveryCounts(a)).toEqual({ auto_refill: 1, refill_failed: 1 });

    await co.call('POST', `/v1/accounts/${a}/card`, { body: { token: 'tok_visa' } });
    await advanceTo(at(2029, 4, 3, 1));
    expect((await chargesOldestFirst(co, a)).map((c) => c.status)).toEqual(['succeeded', 'failed', 'succeeded']);
    expect((await balance(co, a)).amount).toBe(200);
    expect(await deliveryCounts(a)).toEqual({ auto_refill: 2, refill_failed: 1 });
    const [sent] = await query<{ n: string | number }>(t.database.db, sql`select count(*) as n from webhook_deliveries where account_id = ${a} and status = 'succeeded'`);
    expect(Number(sent.n)).toBe(3);
  });
});

describe('mid-month increase', () => {
  endRefillsAfterwards();
  it('cancels the remaining units, credits them at the old unit price and moves the refill day to today', async () => {
    await advanceTo(at(2029, 4, 15, 10));
    const co = await newPayingCompany(t);
    const a = await createAccount(co, { token: 'tok_visa' });
    await setMonthly(co, a, 300, 4500); // 15 cents a unit
    await spend(co, a, 123.5); // 176.5 units left

    await advanceTo(at(2029, 4, 27, 12));
    const r = await co.call('POST', `/v1/accounts/${a}/modifymidmonth`, { body: { account_id: a, denomination: 'credits', amount: '500', usd_charge: '6999' } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    // 176.5 × 4500 / 300 = 2647.5 cents, rounded half up to 2648; 6999 − 2648 = 4351.
    expect(r.body.data).toMatchObject({
      amount: 500,
      refill_amount: 500,
      refill_usd_amount: 6999,
      refill_on_day: '27',
      last_periodic_refill: iso(at(2029, 4, 27, 12)),
      next_periodic_refill: iso(at(2029, 5, 27)),
      credit: 2648,
      charged: 4351,
    });
    const list = await chargesOldestFirst(co, a);
    expect(list.map((c) => [c.amount, c.status])).toEqual([[4500, 'succeeded'], [4351, 'succeeded']]);
    const rows = await ledgerOldestFirst(co, a);
    expect(rows.map((x) => [x.type, x.amount, x.starting_balance, x.ending_balance])).toEqual([
      ['refill', 300, 0, 300],
      [expect.any(String), -123.5, 300, 176.5],
      ['refill_cancelled', -176.5, 176.5, 0],
      ['refill', 500, 0, 500],
    ]);
    expect(rows[2].charge_id).toBe(list[1].id);
    expect(rows[3].charge_id).toBe(list[1].id);

    // A decrease is refused and points to the scheduled path.
    const down = await co.call('PUT', `/v1/accounts/${a}/modifymidmonth`, { body: { denomination: 'credits', amount: 200, usd_charge: 3000 } });
    expect(down.status).toBe(400);
    expect(down.body.error.message).toContain('/v1/accounts/{account_id}/auto_refill');

    // Nothing more on the old day; the new refill day charges the full new price.
    await advanceTo(at(2029, 5, 26, 23, 59, 59));
    expect(await chargesOldestFirst(co, a)).toHaveLength(2);
    await advanceTo(at(2029, 5, 27));
    expect((await chargesOldestFirst(co, a)).map((c) => c.amount)).toEqual([4500, 4351, 6999]);
    expect((await balance(co, a)).amount).toBe(1000);
    await expectLedgerAddsUp(co, a);
  });

  it('credits nothing for an overdrawn balance and charges the whole new price', async () => {
    const co = await newPayingCompany(t);
    const a = await createAccount(co, { token: 'tok_visa' });
    await setMonthly(co, a, 10, 100);
    await spend(co, a, 12);
    const r = await co.call('POST', `/v1/accounts/${a}/modifymidmonth`, { body: { denomination: 'credits', amount: 20, usd_charge: 180 } });
    expect(r.body.data).toMatchObject({ credit: 0, charged: 180, amount: 18 });
    expect((await ledgerOldestFirst(co, a)).map((x) => x.type).filter((x) => x.startsWith('refill'))).toEqual(['refill', 'refill']);
  });
});

describe('scheduled change', () => {
  endRefillsAfterwards();
  it('takes effect at the next monthly refill, not before', async () => {
    await advanceTo(at(2029, 6, 10, 10));
    const co = await newPayingCompany(t);
    const a = await createAccount(co, { token: 'tok_visa' });
    await setMonthly(co, a, 100, 1000);
    const r = await co.call('PUT', `/v1/accounts/${a}/auto_refill`, { body: { denomination: 'credits', amount: 60, usd_charge: 700 } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toEqual({ account_id: a, denomination: 'credits', amount: 60, usd_charge: 700, effective_at: iso(at(2029, 7, 10)) });
    expect(await balance(co, a)).toMatchObject({ refill_amount: 100, refill_usd_amount: 1000, scheduled_refill_change: { amount: 60, usd_charge: 700 } });

    await advanceTo(at(2029, 7, 9, 23, 59, 59));
    expect((await chargesOldestFirst(co, a)).map((c) => c.amount)).toEqual([1000]);
    expect(await balance(co, a)).toMatchObject({ amount: 100, refill_amount: 100 });

    await advanceTo(at(2029, 7, 10));
    expect((await chargesOldestFirst(co, a)).map((c) => c.amount)).toEqual([1000, 700]);
    expect(await balance(co, a)).toMatchObject({ amount: 160, refill_amount: 60, refill_usd_amount: 700, refill_on_day: '10', scheduled_refill_change: null });

    await advanceTo(at(2029, 8, 10, 1));
    expect((await chargesOldestFirst(co, a)).map((c) => c.amount)).toEqual([1000, 700, 700]);
    expect((await ledgerOldestFirst(co, a)).map((x) => x.amount)).toEqual([100, 60, 60]);
  });
});

describe('scheduled change racing the worker', () => {
  endRefillsAfterwards();
  it("a change made after this month's refill was queued waits for the following one", async () => {
    await advanceTo(at(2029, 8, 12, 10));
    const co = await newPayingCompany(t);
    const a = await createAccount(co, { token: 'tok_visa' });
    await setMonthly(co, a, 100, 1000);
    // The worker has queued the September refill (and moved the schedule on) but not run it yet.
    setTestTime(at(2029, 9, 12));
    const { queueDueRefills } = await import('./refills');
    expect(await queueDueRefills(t.database.db, now())).toBeGreaterThanOrEqual(1);
    const r = await co.call('PUT', `/v1/accounts/${a}/auto_refill`, { body: { denomination: 'credits', amount: 60, usd_charge: 700 } });
    expect(r.body.data.effective_at).toBe(iso(at(2029, 10, 12)));
    await runWorker();
    expect((await chargesOldestFirst(co, a)).map((c) => c.amount)).toEqual([1000, 1000]);
    expect((await balance(co, a)).scheduled_refill_change).toMatchObject({ amount: 60, usd_charge: 700 });
    await advanceTo(at(2029, 10, 12, 1));
    expect((await chargesOldestFirst(co, a)).map((c) => c.amount)).toEqual([1000, 1000, 700]);
  });
});

describe('turning refills off', () => {
  endRefillsAfterwards();
  it('DELETE stops the monthly refill: nothing at the next due date', async () => {
    await advanceTo(at(2029, 11, 20, 10));
    const co = await newPayingCompany(t);
    const a = await createAccount(co, { token: 'tok_visa' });
    await setMonthly(co, a, 100, 1000);
    const off = await co.call('DELETE', `/v1/accounts/${a}/balance/credits/auto_refill`);
    expect(off.status).toBe(200);
    expect(off.body.data).toMatchObject({ amount: 100, refill_amount: 0, refill_on_day: '', next_periodic_refill: null });
    await advanceTo(at(2030, 1, 21));
    expect(await chargesOldestFirst(co, a)).toHaveLength(1);
    expect((await balance(co, a)).amount).toBe(100);
  });

  it('DELETE stops threshold refills too', async () => {
    const co = await newPayingCompany(t);
    const a = await createAccount(co, { token: 'tok_visa' });
    await co.call('POST', `/v1/accounts/${a}/balance/credits`, { body: { amount: 30 } });
    await co.call('PUT', `/v1/accounts/${a}/balance/credits/auto_refill`, { body: { amount: 100, usd_charge: 1000, threshold: 20 } });
    await co.call('DELETE', `/v1/accounts/${a}/balance/credits/auto_refill`);
    await spend(co, a, 20);
    await runWorker();
    expect(await chargesOldestFirst(co, a)).toHaveLength(0);
  });
});

describe('scheduled change sent with the balance path\'s fields (refill_period: "monthly")', () => {
  endRefillsAfterwards();
  it('is validated alike, charges nothing now and takes effect at the next monthly refill, on either spelling', async () => {
    await advanceTo(at(2030, 2, 20, 10));
    const co = await newPayingCompany(t);
    const a = await createAccount(co, { token: 'tok_visa' });
    await setMonthly(co, a, 100, 1000);
    const body = { denomination: 'credits', amount: 40, usd_charge: 500, refill_period: 'monthly' };
    const r = await co.call('PUT', `/v1/accounts/${a}/auto_refill`, { body });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toEqual({ account_id: a, denomination: 'credits', amount: 40, usd_charge: 500, effective_at: iso(at(2030, 3, 20)) });
    const again = await co.call('PUT', `/accounts/${a}/autorefill`, { body: { ...body, amount: '45', usd_charge: '550' } });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.data).toMatchObject({ amount: 45, usd_charge: 550, effective_at: iso(at(2030, 3, 20)) });
    // The balance path's own refusals, word for word.
    const { denomination: _, ...balanceBody } = body;
    for (const [path, sent] of [[`/v1/accounts/${a}/auto_refill`, body], [`/v1/accounts/${a}/balance/credits/auto_refill`, balanceBody]] as const) {
      const bad = await co.call('PUT', path, { body: { ...sent, refill_period: 'yearly' } });
      expect(bad.status).toBe(400);
      expect(bad.body.error).toMatchObject({ param: 'refill_period', message: 'refill_period must be monthly' });
    }
    expect((await chargesOldestFirst(co, a)).map((c) => c.amount)).toEqual([1000]);
    expect(await balance(co, a)).toMatchObject({ amount: 100, refill_amount: 100, refill_usd_amount: 1000, scheduled_refill_change: { amount: 45, usd_charge: 550 } });

    await advanceTo(at(2030, 3, 20));
    expect((await chargesOldestFirst(co, a)).map((c) => c.amount)).toEqual([1000, 550]);
    expect(await balance(co, a)).toMatchObject({ amount: 145, refill_amount: 45, refill_usd_amount: 550, refill_on_day: '20', scheduled_refill_change: null });
  });
});

describe('a worker back after months of downtime', () => {
  it('refills once, for the latest refill day, and says in the ledger which were skipped', async () => {
    await advanceTo(at(2031, 1, 10, 9));
    const co = await newPayingCompany(t);
    const a = await createAccount(co, { token: 'tok_visa' });
    await setMonthly(co, a, 100, 900);
    expect(await charges(co, a)).toHaveLength(1);
    // No worker runs from Jan 10 to May 20: the refills of Feb 10, Mar 10, Apr 10 and May 10 come due unseen.
    setTestTime(at(2031, 5, 20, 12));
    await runWorker();
    await runWorker();
    const list = await charges(co, a);
    expect(list.map((c) => [c.amount, c.status])).toEqual([
      [900, 'succeeded'],
      [900, 'succeeded'],
    ]);
    const refills = (await ledgerOldestFirst(co, a)).filter((r) => r.type === 'refill') as (LedgerRow & { description: string })[];
    expect(refills).toHaveLength(2);
    expect(refills[1].description).toBe('Monthly refill of 100 credits (missed while the service was down, not charged: 2031-02-10, 2031-03-10, 2031-04-10)');
    expect(await balance(co, a)).toMatchObject({ amount: 200, next_periodic_refill: iso(at(2031, 6, 10)) });
    await advanceTo(at(2031, 6, 10, 1));
    expect(await charges(co, a)).toHaveLength(3);
    await expectLedgerAddsUp(co, a);
  });
});
