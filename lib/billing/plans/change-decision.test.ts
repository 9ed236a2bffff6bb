import { describe, expect, it } from 'vitest';
import type { Charge } from '../charges/charges';
import { decidePlanChange, describePlanChange, type PlanChangeFacts } from './change-decision';
import type { Plan } from '../catalog/plans';
import type { BillingPeriod } from '../catalog/periods';

const at = (y: number, m: number, d: number, h = 9) => new Date(Date.UTC(y, m - 1, d, h));

function plan(id: string, chargeAmount: number, opts: { period?: BillingPeriod; balances?: { denomination: string; amount: string; variable_unit_price?: string }[] } = {}): Plan {
  const balances = (opts.balances ?? [{ denomination: 'tokens', amount: '1000' }]).map((b) => ({
    overage_charge_amount: 0,
    overage_charge_denomination: 'USD' as const,
    variable_unit_price: null,
    ...b,
  }));
  return {
    id, companyId: 'c_1', name: id, chargeAmount, chargeDenomination: 'USD', billingPeriod: opts.period ?? 'month', overageChargeMode: 'postpay',
    thresholdAlertPercentage: null, balances, billingRules: [], flags: {}, metadata: {}, createdAt: at(2027, 1, 1), updatedAt: null,
  };
}

const pro = plan('p_pro', 2000, { balances: [{ denomination: 'tokens', amount: '1000' }, { denomination: 'gb', amount: '10' }] });
const max = plan('p_max', 5000, { balances: [{ denomination: 'tokens', amount: '5000' }, { denomination: 'gb', amount: '50' }] });

/** An account on Pro for the period [start, end), asking for `target` at `when`. */
function facts(when: Date, target: Plan, over: Partial<Omit<PlanChangeFacts, 'account'>> & { account?: Partial<PlanChangeFacts['account']> } = {}): PlanChangeFacts {
  const { account, ...rest } = over;
  return {
    at: when,
    account: {
      id: 'a_1', planId: pro.id, planStatus: 'ACTIVE', planVariableAmounts: null, planChargeAmount: 2000, scheduledPlanId: null,
      lastPlanRenewal: at(2027, 5, 31), nextPlanRenewal: at(2027, 6, 30), ...account,
    },
    plan: target,
    chosen: null,
    earlier: null,
    pendingPlanChargeId: null,
    overage: { cents: 0, lines: [] },
    ...rest,
  };
}

describe('an upgrade is charged the new period less the unused time of the old, plus its overage, to the cent', () => {
  // [what, facts, credit, charge]
  const cases: [string, PlanChangeFacts, number, number][] = [
    ['19 of 30 days left, 2 GB over at 50 cents: 2000 × 19/30 = 1266.67 → 1267; 5000 − 1267 + 100', facts(at(2027, 6, 11), max, { overage: { cents: 100, lines: ['overage 2 gb = 100 cents'] } }), 1267, 3833],
    ['at the start of the period the whole old charge is credited', facts(at(2027, 5, 31), max), 2000, 3000],
    ['half way through', facts(at(2027, 6, 15, 9), max), 1000, 4000],
    ['a millisecond before the renewal nothing is left to credit', facts(new Date(at(2027, 6, 30).getTime() - 1), max), 0, 5000],
    ['a half cent rounds up: 1001 × 15/30 = 500.5 → 501', facts(at(2027, 6, 15), max, { account: { planChargeAmount: 1001 } }), 501, 4499],
    ['below a half cent rounds down: 1000 × 1h/720h = 1.39 → 1', facts(new Date(at(2027, 6, 30).getTime() - 3_600_000), max, { account: { planChargeAmount: 1000 } }), 1, 4999],
    ['February: Jan 31 → Feb 28 is 28 days, 14 left credit half', facts(at(2027, 2, 14), max, { account: { lastPlanRenewal: at(2027, 1, 31), nextPlanRenewal: at(2027, 2, 28) } }), 1000, 4000],
    ['a leap-year February: Jan 31 → Feb 29 2028 is 29 days, 10 left: 2000 × 10/29 = 689.66 → 690', facts(at(2028, 2, 19), max, { account: { lastPlanRenewal: at(2028, 1, 31), nextPlanRenewal: at(2028, 2, 29) } }), 690, 4310],
    ['a daily plan 6 hours in: 100 × 18/24 = 75', facts(at(2027, 6, 1, 15), plan('p_day2', 300, { period: 'day' }), { account: { planChargeAmount: 100, lastPlanRenewal: at(2027, 6, 1), nextPlanRenewal: at(2027, 6, 2) } }), 75, 225],
    ['a yearly plan, a quarter of 365 days used: 12000 × 273.75/365 = 9000', facts(new Date(at(2027, 1, 1).getTime() + 91.25 * 86_400_000), plan('p_year2', 24000, { period: 'year' }), { account: { planChargeAmount: 12000, lastPlanRenewal: at(2027, 1, 1), nextPlanRenewal: at(2028, 1, 1) } }), 9000, 15000],
    ['an equal period charge is an upgrade: at the start it costs nothing', facts(at(2027, 5, 31), plan('p_twin', 2000)), 2000, 0],
    ['an equal period charge half way: the new period costs what the unused half does not', facts(at(2027, 6, 15, 9), plan('p_twin', 2000)), 1000, 1000],
    ['a free old plan leaves nothing to credit', facts(at(2027, 6, 11), max, { account: { planChargeAmount: 0 } }), 0, 5000],
    [
      'chosen amounts: 5 seats included at 1.5 cents each over, 1000 chosen: 3000 + 995 × 1.5 = 4492.5 → 4493',
      { ...facts(at(2027, 6, 15, 9), plan('p_seats', 3000, { balances: [{ denomination: 'seats', amount: '5', variable_unit_price: '1.5' }] })), chosen: { seats: '1000' } },
      1000,
      3493,
    ],
    ['overage alone on a same-priced plan at the start', facts(at(2027, 5, 31), plan('p_twin', 2000), { overage: { cents: 230, lines: [] } }), 2000, 230],
  ];
  it.each(cases)('%s', (_, f, credit, charge) => {
    const d = decidePlanChange(f);
    expect(d).toMatchObject({ kind: 'upgrade', credit, charge, price: expect.any(Number) });
    if (d.kind === 'upgrade') expect(d.charge).toBe(Math.max(0, d.price - d.credit) + f.overage.cents);
  });
});

describe('every other plan change', () => {
  const earlier = { id: 'ch_1', accountId: 'a_1' } as Charge;
  const cases: [string, PlanChangeFacts, object][] = [
    ['a retried request carries on with its first charge, whatever else is true', facts(at(2027, 6, 11), max, { earlier, pendingPlanChargeId: 'ch_1' }), { kind: 'resume', charge: earlier }],
    ["another account's charge under the same key is not resumed", facts(at(2027, 6, 11), max, { earlier: { ...earlier, accountId: 'a_2' } }), { kind: 'upgrade' }],
    ['waiting for the card collector: the plan is attached for when the card comes', facts(at(2027, 6, 11), max, { account: { planStatus: 'PENDING_PAYMENT_METHOD', planId: null } }), { kind: 'attach_pending' }],
    [
      'waiting for the card collector while its card is being charged: a conflict (that charge would start the old plan)',
      facts(at(2027, 6, 11), max, { account: { planStatus: 'PENDING_PAYMENT_METHOD', planId: 'p_pro' }, pendingPlanChargeId: 'ch_start' }),
      { kind: 'conflict' },
    ],
    ['no plan: the plan starts at its full charge', facts(at(2027, 6, 11), max, { account: { planStatus: 'NONE', planId: null, planChargeAmount: null } }), { kind: 'start', charge: 5000 }],
    ['a cancelled plan: the new plan starts at its full charge, no credit', facts(at(2027, 6, 11), max, { account: { planStatus: 'CANCELLED' } }), { kind: 'start', charge: 5000 }],
    ['a start while a plan charge is at the processor is refused', facts(at(2027, 6, 11), max, { account: { planStatus: 'NONE', planId: null }, pendingPlanChargeId: 'ch_9' }), { kind: 'conflict', error: { status: 409, message: expect.stringMatching(/ch_9/) } }],
    ['a cheaper plan is scheduled for the renewal', facts(at(2027, 6, 11), plan('p_lite', 1000)), { kind: 'schedule_downgrade' }],
    ['fewer chosen units of the same plan is a downgrade', { ...facts(at(2027, 6, 11), plan('p_seats', 0, { balances: [{ denomination: 'seats', amount: '5', variable_unit_price: '100' }] }), { account: { planId: 'p_seats', planVariableAmounts: { seats: '8' }, planChargeAmount: 300 } }), chosen: { seats: '6' } }, { kind: 'schedule_downgrade' }],
    ['the current plan again undoes a scheduled downgrade', facts(at(2027, 6, 11), pro, { account: { scheduledPlanId: 'p_lite' } }), { kind: 'cancel_downgrade' }],
    ['the current plan again with nothing scheduled is a bad request', facts(at(2027, 6, 11), pro), { kind: 'conflict', error: { status: 400, param: 'plan_id' } }],
    ['a past-due account waits for its renewal', facts(at(2027, 6, 11), max, { account: { planStatus: 'PAST_DUE' } }), { kind: 'conflict', error: { status: 409, message: expect.stringMatching(/past due/) } }],
    ['a renewal that is due comes first', facts(at(2027, 6, 30), max), { kind: 'conflict', error: { status: 409, message: expect.stringMatching(/renewal is due/) } }],
    ['a downgrade while a plan charge is at the processor is refused', facts(at(2027, 6, 11), plan('p_lite', 1000), { pendingPlanChargeId: 'ch_9' }), { kind: 'conflict', error: { status: 409 } }],
  ];
  it.each(cases)('%s', (_, f, expected) => {
    expect(decidePlanChange(f)).toMatchObject(expected);
  });
});

describe('the balances a change would leave', () => {
  const current = [
    { denomination: 'tokens', amount: '-120', managedByPlanId: pro.id },
    { denomination: 'gb', amount: '3', managedByPlanId: pro.id },
    { denomination: 'credits', amount: '7.25', managedByPlanId: null },
  ];
  it('an upgrade sets the new plan balances to their included amounts and closes the old plan balances it lacks', () => {
    const target = plan('p_big', 9000, { balances: [{ denomination: 'tokens', amount: '9000' }, { denomination: 'seats', amount: '3' }] });
    const f = facts(at(2027, 6, 15, 9), target);
    const d = decidePlanChange(f);
    if (d.kind !== 'upgrade') throw new Error(d.kind);
    expect(describePlanChange(f, d, current)).toEqual({
      kind: 'upgrade', planId: 'p_big', effective: 'now', chargeAmount: 8000, carriedAmount: 0, priceAmount: 9000, creditAmount: 1000, overageAmount: 0, nextPlanRenewal: at(2027, 7, 15, 9),
      balances: [
        { denomination: 'credits', amount: '7.25', managedByPlanId: null },
        { denomination: 'gb', amount: '0', managedByPlanId: null },
        { denomination: 'seats', amount: '3', managedByPlanId: 'p_big' },
        { denomination: 'tokens', amount: '9000', managedByPlanId: 'p_big' },
      ],
    });
  });
  it('a scheduled downgrade charges nothing and leaves the balances until the renewal', () => {
    const f = facts(at(2027, 6, 11), plan('p_lite', 1000));
    const d = decidePlanChange(f);
    if (d.kind !== 'schedule_downgrade') throw new Error(d.kind);
    expect(describePlanChange(f, d, current)).toMatchObject({ effective: 'next_renewal', chargeAmount: 0, creditAmount: 0, nextPlanRenewal: at(2027, 6, 30), balances: [current[2], current[1], current[0]] });
  });
});
