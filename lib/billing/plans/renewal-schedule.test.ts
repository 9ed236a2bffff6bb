process.env.BILLING_TEST_CLOCK = '1';
process.env.ADMIN_TOKEN = 'admin-secret-for-tests';

import { beforeAll, describe, expect, it } from 'vitest';
import { newPayingCompany, useLocalStripe, useTestDatabase } from '../../testing/harness';
import { now, setTestTime } from '../../clock';
import { query, sql } from '../../db/client';
import { advance, advanceTo, charges, createAccount, createPlan } from '../../testing/scenario';

const t = useTestDatabase();
useLocalStripe();

const at = (y: number, m: number, d: number, h = 9) => new Date(Date.UTC(y, m - 1, d, h));

beforeAll(async () => {
  setTestTime(at(2027, 1, 31).getTime());
  await advance(0);
});

describe('a plan switched at a renewal', () => {
  it('keeps renewing on the day of the month it started, as a plan never switched does', async () => {
    const co = await newPayingCompany(t);
    const pro = await createPlan(co, { name: 'Pro', charge_amount: 2000, billing_period: 'month', balances: [{ amount: 100, denomination: 'tokens' }] });
    const basic = await createPlan(co, { name: 'Basic', charge_amount: 1000, billing_period: 'month', balances: [{ amount: 10, denomination: 'tokens' }] });
    const yearly = await createPlan(co, { name: 'Yearly', charge_amount: 500, billing_period: 'year', balances: [{ amount: 5, denomination: 'tokens' }] });
    const [switched, kept, toYearly] = [await createAccount(co, { plan_id: pro.id, token: 'tok_visa' }), await createAccount(co, { plan_id: pro.id, token: 'tok_visa' }), await createAccount(co, { plan_id: pro.id, token: 'tok_visa' })];
    // Cheaper plans: scheduled for the renewal due on Feb 28.
    expect((await co.call('POST', `/v1/accounts/${switched}/changeplan`, { body: { plan_id: basic.id } })).body.data.scheduled_plan_id).toBe(basic.id);
    expect((await co.call('POST', `/v1/accounts/${toYearly}/changeplan`, { body: { plan_id: yearly.id } })).body.data.scheduled_plan_id).toBe(yearly.id);
    await advanceTo(at(2027, 6, 1));
    const renewalDays = async (id: string) =>
      ((await charges(co, id)) as unknown as { reason: string; created_at: string }[])
        .filter((c) => c.reason === 'plan_renewal')
        .map((c) => c.created_at.slice(0, 10))
        .reverse();
    expect(await renewalDays(kept)).toEqual(['2027-02-28', '2027-03-31', '2027-04-30', '2027-05-31']);
    expect(await renewalDays(switched)).toEqual(['2027-02-28', '2027-03-31', '2027-04-30', '2027-05-31']);
    expect((await co.call('GET', `/v1/accounts/${switched}`)).body.data).toMatchObject({ plan_id: basic.id, next_plan_renewal: at(2027, 6, 30).toISOString() });
    // Another period length starts its own cadence at the switch.
    expect(await renewalDays(toYearly)).toEqual(['2027-02-28']);
    expect((await co.call('GET', `/v1/accounts/${toYearly}`)).body.data).toMatchObject({ plan_id: yearly.id, next_plan_renewal: at(2028, 2, 28).toISOString() });
  });
});

describe('a past-due renewal tried with each new card', () => {
  it('leaves the retry schedule as it was when the card is declined, and renews with a good one', async () => {
    const co = await newPayingCompany(t);
    const pro = await createPlan(co, { name: 'Pro', charge_amount: 2000, billing_period: 'month', balances: [{ amount: 100, denomination: 'tokens' }] });
    const id = await createAccount(co, { plan_id: pro.id, token: 'tok_visa' });
    expect((await co.call('POST', `/v1/accounts/${id}/card`, { body: { token: 'tok_chargeDeclined' } })).status).toBe(200);
    const due = new Date((await co.call('GET', `/v1/accounts/${id}`)).body.data.next_plan_renewal);
    await advanceTo(due);
    const schedule = async () => (await query<{ attempts: number; retry_at: string }>(t.database.db, sql`select renewal_attempts as attempts, renewal_retry_at::text as retry_at from accounts where id = ${id}`))[0];
    const before = await schedule();
    expect(before.attempts).toBe(1);
    expect((await co.call('GET', `/v1/accounts/${id}`)).body.data.plan_status).toBe('PAST_DUE');
    // Declined cards in a row: each new one is tried at once (the same card again is not), none moves the schedule.
    for (const token of ['tok_chargeDeclined', 'tok_chargeDeclinedInsufficientFunds', 'tok_chargeDeclined']) {
      expect((await co.call('POST', `/v1/accounts/${id}/card`, { body: { token } })).status).toBe(200);
      expect((await co.call('GET', `/v1/accounts/${id}`)).body.data.plan_status).toBe('PAST_DUE');
    }
    expect(await schedule()).toEqual(before);
    const tried = ((await charges(co, id)) as unknown as { reason: string; status: string }[]).filter((c) => c.reason === 'plan_renewal');
    // The scheduled attempt, then one per distinct card.
    expect(tried.map((c) => c.status)).toEqual(['failed', 'failed', 'failed']);
    // The scheduled retry still comes on its day and charges the card on file.
    expect(new Date(before.retry_at).getTime()).toBeGreaterThan(now().getTime());
    expect((await co.call('POST', `/v1/accounts/${id}/card`, { body: { token: 'tok_visa' } })).status).toBe(200);
    const renewed = (await co.call('GET', `/v1/accounts/${id}`)).body.data;
    expect(renewed.plan_status).toBe('ACTIVE');
    expect(new Date(renewed.next_plan_renewal).getTime()).toBeGreaterThan(due.getTime());
  });
});

describe('a past-due renewal paid after the period it was due for has ended', () => {
  it('renews the period under way at the payment, once, keeping the renewal day', async () => {
    const co = await newPayingCompany(t);
    const pro = await createPlan(co, { name: 'Pro', charge_amount: 2000, billing_period: 'month', balances: [{ amount: 100, denomination: 'tokens' }] });
    const id = await createAccount(co, { plan_id: pro.id, token: 'tok_visa' });
    expect((await co.call('POST', `/v1/accounts/${id}/card`, { body: { token: 'tok_chargeDeclined' } })).status).toBe(200);
    const first = (await co.call('GET', `/v1/accounts/${id}`)).body.data;
    const due = new Date(first.next_plan_renewal);
    await advanceTo(due);
    expect((await co.call('GET', `/v1/accounts/${id}`)).body.data.plan_status).toBe('PAST_DUE');
    // Past the end of the period that was due, and two days into the next one.
    const anchorDay = new Date(first.last_plan_renewal).getUTCDate();
    const nextDue = new Date(Date.UTC(due.getUTCFullYear(), due.getUTCMonth() + 1, 1, due.getUTCHours()));
    nextDue.setUTCDate(Math.min(anchorDay, new Date(Date.UTC(nextDue.getUTCFullYear(), nextDue.getUTCMonth() + 1, 0)).getUTCDate()));
    await advanceTo(new Date(nextDue.getTime() + 2 * 86_400_000));
    expect((await co.call('GET', `/v1/accounts/${id}`)).body.data.plan_status).toBe('PAST_DUE');
    const used = await co.call('POST', `/v1/accounts/${id}/events`, { body: { type: 'use', cost_override_amount: 30, cost_override_denomination: 'tokens' } });
    expect(used.status, JSON.stringify(used.body)).toBe(200);

    // The new card pays: one renewal charge, for the period under way.
    expect((await co.call('POST', `/v1/accounts/${id}/card`, { body: { token: 'tok_visa' } })).status).toBe(200);
    await advance(3600);
    const renewed = (await co.call('GET', `/v1/accounts/${id}`)).body.data;
    expect(renewed.plan_status).toBe('ACTIVE');
    expect(renewed.last_plan_renewal).toBe(nextDue.toISOString());
    expect(new Date(renewed.next_plan_renewal).getTime()).toBeGreaterThan(now().getTime());
    expect(new Date(renewed.next_plan_renewal).getUTCDate()).toBe(Math.min(anchorDay, new Date(Date.UTC(new Date(renewed.next_plan_renewal).getUTCFullYear(), new Date(renewed.next_plan_renewal).getUTCMonth() + 1, 0)).getUTCDate()));
    const paid = ((await charges(co, id)) as unknown as { reason: string; status: string; amount: number }[]).filter((c) => c.reason === 'plan_renewal' && c.status === 'succeeded');
    expect(paid.map((c) => c.amount)).toEqual([2000]);
    expect((await co.call('GET', `/v1/accounts/${id}/balance/tokens`)).body.data.amount).toBe(100);
  });
});
