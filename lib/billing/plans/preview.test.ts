process.env.BILLING_TEST_CLOCK = '1';

import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { newPayingCompany, useLocalStripe, useTestDatabase } from '../../testing/harness';
import { now, setTestTime } from '../../clock';
import { computePeriodEnd, type BillingPeriod } from './periods';

const t = useTestDatabase();
useLocalStripe();

type Co = Awaited<ReturnType<typeof newPayingCompany>>;
type Charge = { id: string; amount: number; reason: string; status: string };
type Level = { denomination: string; amount: number; managed_by_plan_id: string | null };

const planSpec = fc.record({
  charge: fc.integer({ min: 0, max: 20_000 }),
  period: fc.constantFrom<BillingPeriod>('day', 'week', 'month', 'year'),
  tokens: fc.integer({ min: 1, max: 5000 }),
  gb: fc.option(fc.integer({ min: 1, max: 100 }), { nil: undefined }),
  tokenOverage: fc.integer({ min: 0, max: 7 }),
});
type PlanSpec = typeof planSpec extends fc.Arbitrary<infer T> ? T : never;

async function createPlan(co: Co, p: PlanSpec) {
  const balances = [
    { amount: p.tokens, denomination: 'tokens', overage_charge_amount: p.tokenOverage },
    ...(p.gb ? [{ amount: p.gb, denomination: 'gb', overage_charge_amount: 50 }] : []),
  ];
  const r = await co.call('POST', '/v1/companies/{company}/plans', { body: { name: 'P', charge_amount: p.charge, billing_period: p.period, overage_charge_mode: 'postpay', balances } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data.id as string;
}

async function chargesOf(co: Co, id: string): Promise<Charge[]> {
  return (await co.call('GET', `/v1/accounts/${id}/charges`)).body.data;
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
        const [fromId, toId] = [await createPlan(co, from), await createPlan(co, to)];
        const created = await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Ada', email: 'ada@x.io', plan_id: fromId, token: 'tok_visa' } });
        expect(created.status, JSON.stringify(created.body)).toBe(200);
        const id = created.body.data.id as string;
        if (used) expect((await co.call('POST', `/v1/accounts/${id}/events`, { body: { type: 'use', cost_override_amount: used, cost_override_denomination: 'tokens' } })).status).toBe(200);
        // Some day (and second) of the current period, before its renewal is due.
        const start = now().getTime();
        const end = computePeriodEnd(new Date(start), from.period, 1).getTime();
        setTestTime(start + Math.floor((end - start) * elapsed));

        const preview = await co.call('POST', `/v1/accounts/${id}/changeplan/preview`, { body: { plan_id: toId } });
        expect(preview.status, JSON.stringify(preview.body)).toBe(200);
        const p = preview.body.data;
        const before = await chargesOf(co, id);
        const changed = await co.call('POST', `/v1/accounts/${id}/changeplan`, { body: { plan_id: toId } });
        expect(changed.status, JSON.stringify(changed.body)).toBe(200);
        const after = await chargesOf(co, id);

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
    const fromId = await createPlan(co, { charge: 2000, period: 'month', tokens: 100, gb: undefined, tokenOverage: 0 });
    const id = (await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Ada', email: 'ada@x.io', plan_id: fromId, token: 'tok_visa' } })).body.data.id as string;
    const account = (await co.call('GET', `/v1/accounts/${id}`)).body.data;
    const same = await co.call('POST', `/v1/accounts/${id}/changeplan/preview`, { body: { plan_id: fromId } });
    expect(same.status).toBe(400);
    expect(same.body.error).toMatchObject({ type: 'invalid_request', param: 'plan_id' });
    const missing = await co.call('POST', `/v1/accounts/${id}/changeplan/preview`, { body: { plan_id: 'p_doesnotexist' } });
    expect(missing.status).toBe(404);
    const bad = await co.call('POST', `/v1/accounts/${id}/changeplan/preview`, { body: { plan: fromId } });
    expect(bad.status).toBe(400);
    const toId = await createPlan(co, { charge: 9000, period: 'month', tokens: 900, gb: undefined, tokenOverage: 0 });
    expect((await co.call('POST', `/v1/accounts/${id}/changeplan/preview`, { body: { plan_id: toId } })).body.data).toMatchObject({ effective: 'now', plan_id: toId });
    expect((await co.call('GET', `/v1/accounts/${id}`)).body.data).toEqual(account);
    expect(await chargesOf(co, id)).toHaveLength(1);
    const get = await co.call('GET', `/v1/accounts/${id}/changeplan/preview`);
    expect(get.status).toBe(404);
    expect(get.body.error.message).toMatch(/answers POST/);
  });
});
