process.env.BILLING_TEST_CLOCK = '1';

import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { newPayingCompany, useLocalStripe, useTestDatabase } from '../../testing/harness';
import { now, setTestTime } from '../../clock';
import { computePeriodEnd, type BillingPeriod } from './periods';
import { charges, createAccount, createPlan, spend } from '../../testing/scenario';

const t = useTestDatabase();
useLocalStripe();

type Co = Awaited<ReturnType<typeof newPayingCompany>>;
type Level = { denomination: string; amount: number; managed_by_plan_id: string | null };

const planSpec = fc.record({
  charge: fc.integer({ min: 0, max: 20_000 }),
  period: fc.constantFrom<BillingPeriod>('day', 'week', 'month', 'year'),
  tokens: fc.integer({ min: 1, max: 5000 }),
  gb: fc.option(fc.integer({ min: 1, max: 100 }), { nil: undefined }),
  tokenOverage: fc.integer({ min: 0, max: 7 }),
});
type PlanSpec = typeof planSpec extends fc.Arbitrary<infer T> ? T : never;

async function createSpecPlan(co: Co, p: PlanSpec) {
  const balances = [
    { amount: p.tokens, denomination: 'tokens', overage_charge_amount: p.tokenOverage },
    ...(p.gb ? [{ amount: p.gb, denomination: 'gb', overage_charge_amount: 50 }] : []),
  ];
  return (await createPlan(co, { name: 'P', charge_amount: p.charge, billing_period: p.period, overage_charge_mode: 'postpay', balances })).id;
}

async function levels(co: Co, id: string): Promise<Level[]> {
  const list = (await co.call('GET', `/v1/accounts/${id}/balances`)).body.data as Level[];
  return list.map((b) => ({ denomination: b.denomination, amount: b.amount, managed_by_plan_id: b.managed_by_plan_id })).sort((a, b) => (a.denomination < b.denomination ? -1 : 1));
}

describe('changeplan/preview', () => {
  it('answers exactly what changeplan then charges, and the balances it leaves, on random plans and days of the period', async () => {
    const co = await newPayingCompany(t);
    await fc.assert(
      fc.asyncProperty(planSpec, planSpec, fc.double({ min: 0, max: 0.999, noNaN: true }), fc.integer({ min: 0, max: 9000 }), async (from, to, elapsed, used) => {
        const [fromId, toId] = [await createSpecPlan(co, from), await createSpecPlan(co, to)];
        const id = await createAccount(co, { plan_id: fromId, token: 'tok_visa' });
        if (used) await spend(co, id, used, { type: 'use', denomination: 'tokens' });
        // Some day (and second) of the current period, before its renewal is due.
        const start = now().getTime();
        const end = computePeriodEnd(new Date(start), from.period, 1).getTime();
        setTestTime(start + Math.floor((end - start) * elapsed));

        const preview = await co.call('POST', `/v1/accounts/${id}/changeplan/preview`, { body: { plan_id: toId } });
        expect(preview.status, JSON.stringify(preview.body)).toBe(200);
        const p = preview.body.data;
        const before = await charges(co, id);
        const changed = await co.call('POST', `/v1/accounts/${id}/changeplan`, { body: { plan_id: toId } });
        expect(changed.status, JSON.stringify(changed.body)).toBe(200);
        const after = await charges(co, id);

        if (p.charge_amount > 0) {
          expect(after).toHaveLength(before.length + 1);
          expect(after[0]).toMatchObject({ amount: p.charge_amount, reason: 'plan_change', status: 'succeeded' });
        } else {
          expect(after).toHaveLength(before.length);
        }
        expect(p.charge_amount).toBe(Math.max(0, to.charge - p.credit_amount) * Number(p.effective === 'now') + p.overage_amount);
        if (to.charge < from.charge) {
          expect(p).toMatchObject({ effective: 'next_renewal', charge_amount: 0, next_plan_renewal: changed.body.data.next_plan_renewal });
          expect(changed.body.data.scheduled_plan_id).toBe(toId);
        } else {
          expect(p).toMatchObject({ effective: 'now', next_plan_renewal: changed.body.data.next_plan_renewal });
          expect(changed.body.data.plan_id).toBe(toId);
        }
        expect(p.balances).toEqual(await levels(co, id));
      }),
      { numRuns: 15 },
    );
  }, 180_000);

  it('changes nothing, and answers a refused change with the error changeplan gives', async () => {
    const co = await newPayingCompany(t);
    const fromId = await createSpecPlan(co, { charge: 2000, period: 'month', tokens: 100, gb: undefined, tokenOverage: 0 });
    const id = await createAccount(co, { plan_id: fromId, token: 'tok_visa' });
    const account = (await co.call('GET', `/v1/accounts/${id}`)).body.data;
    const same = await co.call('POST', `/v1/accounts/${id}/changeplan/preview`, { body: { plan_id: fromId } });
    expect(same.status).toBe(400);
    expect(same.body.error).toMatchObject({ type: 'invalid_request', param: 'plan_id' });
    const missing = await co.call('POST', `/v1/accounts/${id}/changeplan/preview`, { body: { plan_id: 'p_doesnotexist' } });
    expect(missing.status).toBe(404);
    const bad = await co.call('POST', `/v1/accounts/${id}/changeplan/preview`, { body: { plan: fromId } });
    expect(bad.status).toBe(400);
    const toId = await createSpecPlan(co, { charge: 9000, period: 'month', tokens: 900, gb: undefined, tokenOverage: 0 });
    expect((await co.call('POST', `/v1/accounts/${id}/changeplan/preview`, { body: { plan_id: toId } })).body.data).toMatchObject({ effective: 'now', plan_id: toId });
    expect((await co.call('GET', `/v1/accounts/${id}`)).body.data).toEqual(account);
    expect(await charges(co, id)).toHaveLength(1);
    const get = await co.call('GET', `/v1/accounts/${id}/changeplan/preview`);
    expect(get.status).toBe(404);
    expect(get.body.error.message).toMatch(/answers POST/);
  });
});
