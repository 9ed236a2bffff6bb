process.env.BILLING_TEST_CLOCK = '1';

import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { newPayingCompany, useLocalStripe, useTestDatabase } from '../../testing/harness';
import { now, setTestTime } from '../../clock';
import { computePeriodEnd, type BillingPeriod } from './periods';
import { charges, createAccount, createPlan, spend, type PayingCo } from '../../testing/scenario';
import { splitForCard } from '../../money';
import { NO_RETRY } from '../../testing/retry';

const t = useTestDatabase();
useLocalStripe();

type Level = { denomination: string; amount: number; managed_by_plan_id: string | null };

const planSpec = fc.record({
  // A plan's price is 0 or a card payment (at least 50 cents).
  charge: fc.oneof(fc.constant(0), fc.integer({ min: 50, max: 20_000 })),
  period: fc.constantFrom<BillingPeriod>('day', 'week', 'month', 'year'),
  tokens: fc.integer({ min: 1, max: 5000 }),
  gb: fc.option(fc.integer({ min: 1, max: 100 }), { nil: undefined }),
  tokenOverage: fc.integer({ min: 0, max: 7 }),
});
type PlanSpec = typeof planSpec extends fc.Arbitrary<infer T> ? T : never;

async function createSpecPlan(co: PayingCo, p: PlanSpec) {
  const balances = [
    { amount: p.tokens, denomination: 'tokens', overage_charge_amount: p.tokenOverage },
    ...(p.gb ? [{ amount: p.gb, denomination: 'gb', overage_charge_amount: 50 }] : []),
  ];
  return (await createPlan(co, { name: 'P', charge_amount: p.charge, billing_period: p.period, overage_charge_mode: 'postpay', balances })).id;
}

async function levels(co: PayingCo, id: string): Promise<Level[]> {
  const list = (await co.call('GET', `/v1/accounts/${id}/balances`)).body.data as Level[];
  return list.map((b) => ({ denomination: b.denomination, amount: b.amount, managed_by_plan_id: b.managed_by_plan_id })).sort((a, b) => (a.denomination < b.denomination ? -1 : 1));
}

describe('changeplan/preview', NO_RETRY, () => {
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

        if (p.charge_amount > 0 || p.carried_amount > 0) {
          // Below the smallest card payment: a 0-cent charge that carries the cents to the next renewal.
          expect(after).toHaveLength(before.length + 1);
          expect(after[0]).toMatchObject({ amount: p.charge_amount, reason: 'plan_change', status: 'succeeded' });
        } else {
          expect(after).toHaveLength(before.length);
        }
        expect(p.charge_amount + p.carried_amount).toBe(Math.max(0, to.charge - p.credit_amount) * Number(p.effective === 'now') + p.overage_amount);
        expect(splitForCard(p.charge_amount + p.carried_amount)).toEqual({ charge: p.charge_amount, carried: p.carried_amount });
        if (to.charge < from.charge) {
          expect(p).toMatchObject({ effective: 'next_renewal', charge_amount: 0, next_plan_renewal: changed.body.data.next_plan_renewal });
          expect(changed.body.data.scheduled_plan_id).toBe(toId);
        } else {
          expect(p).toMatchObject({ effective: 'now', next_plan_renewal: changed.body.data.next_plan_renewal });
          expect(changed.body.data.plan_id).toBe(toId);
        }
        expect(p.balances).toEqual(await levels(co, id));
      }),
      // 23 on each database: at least the 45 it checked when it also ran through PgBouncer.
      { numRuns: 23 },
    );
  }, 600_000);

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

  it('answers the 402 changeplan gives for a change that charges an account without a card, and records no charge', async () => {
    const co = await newPayingCompany(t);
    const toId = await createSpecPlan(co, { charge: 2500, period: 'month', tokens: 100, gb: undefined, tokenOverage: 0 });
    const id = await createAccount(co);
    const preview = await co.call('POST', `/v1/accounts/${id}/changeplan/preview`, { body: { plan_id: toId } });
    expect(preview.status, JSON.stringify(preview.body)).toBe(402);
    expect(preview.body.error).toMatchObject({ type: 'payment_method_required', message: expect.stringMatching(/no card on file/) });
    expect(await charges(co, id)).toEqual([]);
    const changed = await co.call('POST', `/v1/accounts/${id}/changeplan`, { body: { plan_id: toId } });
    expect(changed.status).toBe(402);
    expect(changed.body.error).toEqual({ ...preview.body.error, request_id: changed.body.error.request_id });
    // A change that charges nothing is previewed as before.
    const freeId = await createSpecPlan(co, { charge: 0, period: 'month', tokens: 10, gb: undefined, tokenOverage: 0 });
    expect((await co.call('POST', `/v1/accounts/${id}/changeplan/preview`, { body: { plan_id: freeId } })).status).toBe(200);
  });

  it('charges what the preview said when the clock moved on after it; ten minutes later, the credit is reckoned anew', async () => {
    const co = await newPayingCompany(t);
    // Large enough that seconds move the credit by cents: 100,000 USD a month for the old plan.
    const fromId = await createSpecPlan(co, { charge: 10_000_000, period: 'month', tokens: 100, gb: undefined, tokenOverage: 0 });
    const toId = await createSpecPlan(co, { charge: 20_000_000, period: 'month', tokens: 900, gb: undefined, tokenOverage: 0 });
    const changeAfter = async (gapMs: number) => {
      const id = await createAccount(co, { plan_id: fromId, token: 'tok_visa' });
      const { last_plan_renewal, next_plan_renewal } = (await co.call('GET', `/v1/accounts/${id}`)).body.data as Record<string, string>;
      const [start, end] = [Date.parse(last_plan_renewal), Date.parse(next_plan_renewal)];
      setTestTime(start + 10 * 86_400_000 + 123);
      const preview = await co.call('POST', `/v1/accounts/${id}/changeplan/preview`, { body: { plan_id: toId } });
      expect(preview.status, JSON.stringify(preview.body)).toBe(200);
      setTestTime(now().getTime() + gapMs / 2);
      // Another preview meanwhile (the console previews again on confirming) says the same.
      const again = await co.call('POST', `/v1/accounts/${id}/changeplan/preview`, { body: { plan_id: toId } });
      const held = again.body.data.charge_amount === preview.body.data.charge_amount;
      setTestTime(now().getTime() + gapMs / 2);
      const changed = await co.call('POST', `/v1/accounts/${id}/changeplan`, { body: { plan_id: toId } });
      expect(changed.status, JSON.stringify(changed.body)).toBe(200);
      // The credit as of the change itself: charge × unused / period, half up.
      const total = BigInt(end - start);
      const asOfChange = Number((10_000_000n * BigInt(end - now().getTime()) * 2n + total) / (2n * total));
      return { previewed: preview.body.data.charge_amount as number, held, charged: (await charges(co, id))[0].amount as number, asOfChange: 20_000_000 - asOfChange };
    };
    const soon = await changeAfter(7_000);
    expect(soon.charged).toBe(soon.previewed);
    expect(soon.held).toBe(true);
    expect(soon.asOfChange).not.toBe(soon.previewed);
    const late = await changeAfter(10 * 60_000 + 2_000);
    // A preview of another change of the account (a downgrade) in between: the first no longer holds.
    const cheapId = await createSpecPlan(co, { charge: 5_000_000, period: 'month', tokens: 10, gb: undefined, tokenOverage: 0 });
    const id = await createAccount(co, { plan_id: fromId, token: 'tok_visa' });
    setTestTime(now().getTime() + 3 * 86_400_000 + 77);
    const first = (await co.call('POST', `/v1/accounts/${id}/changeplan/preview`, { body: { plan_id: toId } })).body.data.charge_amount as number;
    expect((await co.call('POST', `/v1/accounts/${id}/changeplan/preview`, { body: { plan_id: cheapId } })).body.data.effective).toBe('next_renewal');
    setTestTime(now().getTime() + 7_000);
    expect((await co.call('POST', `/v1/accounts/${id}/changeplan`, { body: { plan_id: toId } })).status).toBe(200);
    expect((await charges(co, id))[0].amount).not.toBe(first);
    expect(late.charged).toBe(late.asOfChange);
    expect(late.charged).not.toBe(late.previewed);
  });
});
