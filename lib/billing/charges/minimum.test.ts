process.env.BILLING_TEST_CLOCK = '1';
process.env.ADMIN_TOKEN = 'admin-secret-for-tests';

import { describe, expect, it } from 'vitest';
import { newPayingCompany, useLocalStripe, useTestDatabase } from '../../testing/harness';
import { advance, charges, createAccount, createPlan, spend, type PayingCo } from '../../testing/scenario';

const t = useTestDatabase();
const local = useLocalStripe();

const intents = async (co: PayingCo) => (await local.control(`state?key=${co.processorKey}`)).account.payment_intents as number;

describe('amounts below the smallest card payment ($0.50)', () => {
  it('are refused where a company sets them, with the field named', async () => {
    const co = await newPayingCompany(t);
    const id = await createAccount(co, { token: 'tok_visa' });
    const cases: [string, string, Record<string, unknown>, string][] = [
      ['POST', `/v1/accounts/${id}/deposit`, { denomination: 'credits', amount_to_deposit: 10, amount_to_charge: 30 }, 'amount_to_charge'],
      ['PUT', `/v1/accounts/${id}/balance/credits/auto_refill`, { amount: 10, usd_charge: 49, threshold: 5 }, 'usd_charge'],
      ['POST', '/v1/companies/{company}/plans', { name: 'Tiny', charge_amount: 1, balances: [{ amount: 1, denomination: 'credits' }] }, 'charge_amount'],
    ];
    for (const [method, path, body, param] of cases) {
      const r = await co.call(method, path, { body });
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.error).toMatchObject({ type: 'invalid_request', param });
      expect(r.body.error.message).toMatch(/at least 50 cents/);
    }
    // 0 (free) and 50 are taken.
    expect((await co.call('POST', `/v1/accounts/${id}/deposit`, { body: { denomination: 'credits', amount_to_deposit: 10, amount_to_charge: 0 } })).status).toBe(200);
    expect((await co.call('POST', `/v1/accounts/${id}/deposit`, { body: { denomination: 'credits', amount_to_deposit: 10, amount_to_charge: 50 } })).status).toBe(200);
    expect((await charges(co, id)).map((c) => [c.amount, c.status])).toEqual([[50, 'succeeded']]);
  });

  it('are carried at a renewal (30 cents of overage): the plan renews, and the cents are billed with a later renewal once they reach $0.50', async () => {
    const co = await newPayingCompany(t);
    const plan = await createPlan(co, { name: 'Daily', charge_amount: 0, billing_period: 'day', overage_charge_mode: 'postpay', balances: [{ amount: 10, denomination: 'tokens', overage_charge_amount: 3 }] });
    const id = await createAccount(co, { plan_id: plan.id, token: 'tok_visa' });
    await spend(co, id, 20, { type: 'use', denomination: 'tokens' });
    const paidBefore = await intents(co);
    await advance(86_400);
    expect((await co.call('GET', `/v1/accounts/${id}`)).body.data.plan_status).toBe('ACTIVE');
    expect((await co.call('GET', `/v1/accounts/${id}/balance/tokens`)).body.data.amount).toBe(10);
    // Nothing charged for the 30 cents yet, and nothing lost of them.
    expect((await charges(co, id)).filter((c) => c.reason === 'plan_renewal')).toEqual([]);
    expect(await intents(co)).toBe(paidBefore);
    // A day with 4 tokens over (12 cents): 42 cents, still carried.
    await spend(co, id, 14, { type: 'use', denomination: 'tokens' });
    await advance(86_400);
    expect((await charges(co, id)).filter((c) => c.reason === 'plan_renewal')).toEqual([]);
    // A day with 3 more over (9 cents): 51 cents, charged at once with the renewal, naming what was carried.
    await spend(co, id, 13, { type: 'use', denomination: 'tokens' });
    await advance(86_400);
    const renewals = (await charges(co, id)).filter((c) => c.reason === 'plan_renewal');
    expect(renewals.map((c) => [c.amount, c.status])).toEqual([[51, 'succeeded']]);
    expect(renewals[0].description).toMatch(/carried from earlier renewals \(below \$0\.50 each\): 42 cents/);
    expect(await intents(co)).toBe(paidBefore + 1);
    // Paid: nothing carried any more; the next day without overage charges nothing.
    await advance(86_400);
    expect((await charges(co, id)).filter((c) => c.reason === 'plan_renewal')).toHaveLength(1);
    expect((await co.call('GET', `/v1/accounts/${id}/balance/tokens`)).body.data.amount).toBe(10);
  });

  it('are carried, never waived, at an upgrade: 30 cents of overage and an equal-priced plan are charged with the next renewal', async () => {
    const co = await newPayingCompany(t);
    const a = await createPlan(co, { name: 'A', charge_amount: 1000, billing_period: 'month', overage_charge_mode: 'postpay', balances: [{ amount: 10, denomination: 'tokens', overage_charge_amount: 1 }] });
    const b = await createPlan(co, { name: 'B', charge_amount: 1000, billing_period: 'month', balances: [{ amount: 20, denomination: 'tokens' }] });
    const id = await createAccount(co, { plan_id: a.id, token: 'tok_visa' });
    await spend(co, id, 40, { type: 'use', denomination: 'tokens' });
    const preview = await co.call('POST', `/v1/accounts/${id}/changeplan/preview`, { body: { plan_id: b.id } });
    expect(preview.status, JSON.stringify(preview.body)).toBe(200);
    expect(preview.body.data).toMatchObject({ effective: 'now', credit_amount: 1000, overage_amount: 30, charge_amount: 0, carried_amount: 30 });
    const paidBefore = await intents(co);
    const changed = await co.call('POST', `/v1/accounts/${id}/changeplan`, { body: { plan_id: b.id } });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    expect(changed.body.data).toMatchObject({ plan_id: b.id, plan_status: 'ACTIVE' });
    expect((await co.call('GET', `/v1/accounts/${id}/balance/tokens`)).body.data.amount).toBe(20);
    expect(await intents(co)).toBe(paidBefore);
    const change = (await charges(co, id)).find((c) => c.reason === 'plan_change')!;
    expect(change).toMatchObject({ amount: 0, status: 'succeeded' });
    expect(change.description).toMatch(/\$0\.30 carried to the next renewal/);
    // The next renewal charges the period and the 30 cents.
    await advance(31 * 86_400);
    const renewals = (await charges(co, id)).filter((c) => c.reason === 'plan_renewal');
    expect(renewals.map((c) => [c.amount, c.status])).toEqual([[1030, 'succeeded']]);
    expect(renewals[0].description).toMatch(/carried from earlier renewals \(below \$0\.50 each\): 30 cents/);
  });

  it('are carried at a mid-month change whose credit leaves less than 50 cents, and charged with the next renewal', async () => {
    const co = await newPayingCompany(t);
    const plan = await createPlan(co, { name: 'Base', charge_amount: 500, billing_period: 'month', balances: [{ amount: 5, denomination: 'tokens' }] });
    const id = await createAccount(co, { plan_id: plan.id, token: 'tok_visa' });
    expect((await co.call('PUT', `/v1/accounts/${id}/balance/credits/auto_refill`, { body: { amount: 100, usd_charge: 1000, refill_period: 'monthly' } })).status).toBe(200);
    // 100 units left are worth 1000 cents: 1020 for 102 units leaves 20 cents to pay.
    const mid = await co.call('POST', `/v1/accounts/${id}/modifymidmonth`, { body: { denomination: 'credits', amount: 102, usd_charge: 1020 } });
    expect(mid.status, JSON.stringify(mid.body)).toBe(200);
    expect(mid.body.data).toMatchObject({ credit: 1000, charged: 0, amount: 102 });
    await advance(31 * 86_400);
    const renewals = (await charges(co, id)).filter((c) => c.reason === 'plan_renewal');
    expect(renewals.map((c) => c.amount)).toEqual([520]);
  });
});
