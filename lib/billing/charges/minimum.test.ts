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

  it('are waived for an upgrade whose credit leaves less than 50 cents, as its preview says', async () => {
    const co = await newPayingCompany(t);
    const small = await createPlan(co, { name: 'Small', charge_amount: 1000, billing_period: 'month', balances: [{ amount: 10, denomination: 'tokens' }] });
    const next = await createPlan(co, { name: 'Next', charge_amount: 1030, billing_period: 'month', balances: [{ amount: 11, denomination: 'tokens' }] });
    const id = await createAccount(co, { plan_id: small.id, token: 'tok_visa' });
    const preview = await co.call('POST', `/v1/accounts/${id}/changeplan/preview`, { body: { plan_id: next.id } });
    expect(preview.status, JSON.stringify(preview.body)).toBe(200);
    expect(preview.body.data).toMatchObject({ effective: 'now', credit_amount: 1000, charge_amount: 0 });
    const paidBefore = await intents(co);
    const changed = await co.call('POST', `/v1/accounts/${id}/changeplan`, { body: { plan_id: next.id } });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    expect(changed.body.data).toMatchObject({ plan_id: next.id, plan_status: 'ACTIVE' });
    expect((await co.call('GET', `/v1/accounts/${id}/balance/tokens`)).body.data.amount).toBe(11);
    expect(await intents(co)).toBe(paidBefore);
  });
});
