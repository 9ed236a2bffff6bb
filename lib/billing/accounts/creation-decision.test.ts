import { describe, expect, it } from 'vitest';
import type { Account, PlanStatus } from '../../db/schema';
import type { Charge } from '../charges/charges';
import type { Plan } from '../catalog/plans';
import { decideAccountCreation, decidePendingPlanStart, type AccountCreationFacts } from './creation-decision';

function plan(id: string, chargeAmount: number, balances: { denomination: string; amount: string; variable_unit_price?: string }[] = [{ denomination: 'tokens', amount: '1000' }]): Plan {
  return {
    id, companyId: 'c_1', name: id, chargeAmount, chargeDenomination: 'USD', billingPeriod: 'month', overageChargeMode: 'postpay', thresholdAlertPercentage: null,
    balances: balances.map((b) => ({ overage_charge_amount: 0, overage_charge_denomination: 'USD', variable_unit_price: null, ...b })),
    billingRules: [], flags: {}, metadata: {}, createdAt: new Date(Date.UTC(2027, 0, 1)), updatedAt: null,
  };
}

const pro = plan('p_pro', 2000);
const free = plan('p_free', 0);
const seats = plan('p_seats', 3000, [{ denomination: 'seats', amount: '5', variable_unit_price: '150' }, { denomination: 'tokens', amount: '1000' }]);
const card = { id: 'pm_1', brand: 'visa', last4: '4242', exp_month: 12, exp_year: 2030 };

/** A company with a processor key, asked for an account on `p` with a card token. */
function facts(p: Plan | null, over: Partial<AccountCreationFacts> = {}): AccountCreationFacts {
  return { plan: p, chosen: null, collector: false, hasProcessor: true, token: true, paymentMethod: null, earlier: null, ...over };
}

describe('an account created with a plan starts billing at once at the period charge of its chosen amounts, to the cent', () => {
  // [what, facts, charge]
  const cases: [string, AccountCreationFacts, number][] = [
    ['the plan charge', facts(pro), 2000],
    ['the included amounts when none are chosen', facts(seats), 3000],
    ['8 seats of 5 included at 150 cents: 3000 + 3 × 150', facts(seats, { chosen: { seats: '8' } }), 3450],
    ['fewer seats than included lower the charge: 3000 − 2 × 150', facts(seats, { chosen: { seats: '3' } }), 2700],
    ['never below 0: 0 seats of a plan whose charge is less than their worth', facts(plan('p_cheap', 500, [{ denomination: 'seats', amount: '5', variable_unit_price: '150' }]), { chosen: { seats: '0' } }), 0],
    ['a half cent rounds up: 1000 seats at 1.5 cents, 995 over the 5 included = 1492.5 → 1493', facts(plan('p_half', 3000, [{ denomination: 'seats', amount: '5', variable_unit_price: '1.5' }]), { chosen: { seats: '1000' } }), 4493],
    ['below a half cent rounds down: 100 + 2.2 units over at 1.1 cents = 102.42 → 102', facts(plan('p_frac', 100, [{ denomination: 'gb', amount: '1', variable_unit_price: '1.1' }]), { chosen: { gb: '3.2' } }), 102],
    ['below 50 cents, the smallest card payment, it is still the charge (carried to the first renewal when made): 2.2 units over at 1.1 cents = 2.42 → 2', facts(plan('p_frac0', 0, [{ denomination: 'gb', amount: '1', variable_unit_price: '1.1' }]), { chosen: { gb: '3.2' } }), 2],
    ['a chosen amount for a fixed balance changes nothing', facts(seats, { chosen: { tokens: '5000' } }), 3000],
    ['a free plan starts without payment information or a processor', facts(free, { hasProcessor: false, token: false }), 0],
    ['a processor customer with a default card pays without a token', facts(pro, { token: false, paymentMethod: card }), 2000],
  ];
  it.each(cases)('%s', (_, f, charge) => {
    expect(decideAccountCreation(f)).toEqual({ kind: 'start', plan: f.plan, charge });
  });
});

describe('every other account creation', () => {
  const earlier = { account: { id: 'a_1' } as Account, charge: { id: 'ch_1', accountId: 'a_1' } as Charge };
  const cases: [string, AccountCreationFacts, object][] = [
    ['no plan: an account without one', facts(null, { token: false }), { kind: 'open', collector: false }],
    ['no plan, with a card token', facts(null), { kind: 'open', collector: false }],
    ['no plan, with the card collector: the link is made, no plan waits', facts(null, { collector: true, token: false }), { kind: 'open', collector: true }],
    ['the card collector: the plan waits for the card, nothing is charged now', facts(pro, { collector: true, token: false }), { kind: 'attach_pending', plan: pro }],
    ['the card collector with chosen amounts: the plan waits too', facts(seats, { collector: true, token: false, chosen: { seats: '8' } }), { kind: 'attach_pending', plan: seats }],
    [
      'a plan that charges without a token, a default card or the collector is refused before anything is made',
      facts(pro, { token: false }),
      { kind: 'conflict', error: { type: 'payment_method_required', param: 'token', message: expect.stringMatching(/Plan p_pro charges 2000 cents per period/) } },
    ],
    ['chosen amounts that make a free plan charge need payment information too', facts(plan('p_var', 0, [{ denomination: 'seats', amount: '0', variable_unit_price: '100' }]), { token: false, chosen: { seats: '2' } }), { kind: 'conflict', error: { type: 'payment_method_required', message: expect.stringMatching(/200 cents/) } }],
    ['the smallest card payment a period needs payment information', facts(plan('p_min', 50), { token: false }), { kind: 'conflict', error: { type: 'payment_method_required', message: expect.stringMatching(/charges 50 cents/) } }],
    ['less needs none: it is carried, not charged now (a plan made before prices under 50 cents were refused)', facts(plan('p_cent', 1), { token: false }), { kind: 'start', charge: 1 }],
    ['chosen amounts that make the charge 0 need none', facts(plan('p_var2', 200, [{ denomination: 'seats', amount: '2', variable_unit_price: '100' }]), { token: false, chosen: { seats: '0' } }), { kind: 'start', charge: 0 }],
    ['a card token without a processor key', facts(pro, { hasProcessor: false }), { kind: 'conflict', error: { status: 400, param: 'token' } }],
    ['the card collector without a processor key', facts(pro, { hasProcessor: false, collector: true, token: false }), { kind: 'conflict', error: { status: 400, param: 'enable_card_collector' } }],
    ['the card collector without a plan or a processor key', facts(null, { hasProcessor: false, collector: true, token: false }), { kind: 'conflict', error: { param: 'enable_card_collector' } }],
    ['a retried request carries on with its first account and charge, whatever else is true', facts(pro, { earlier, token: false, hasProcessor: false }), { kind: 'resume', account: earlier.account, charge: earlier.charge }],
    ['an earlier charge does not matter to the card collector', facts(pro, { earlier, collector: true, token: false }), { kind: 'attach_pending' }],
    ['an earlier charge does not matter without a plan', facts(null, { earlier }), { kind: 'open' }],
  ];
  it.each(cases)('%s', (_, f, expected) => {
    expect(decideAccountCreation(f)).toMatchObject(expected);
  });
});

describe('a card saved through the collector starts the plan that waited for it', () => {
  const waiting = { planId: seats.id, planStatus: 'PENDING_PAYMENT_METHOD' as PlanStatus, planVariableAmounts: { seats: '8' } };
  const cases: [string, Parameters<typeof decidePendingPlanStart>[0], object][] = [
    ['at the period charge of the chosen amounts: 3000 + 3 × 150', { account: waiting, plan: seats }, { kind: 'start', plan: seats, chosen: { seats: '8' }, charge: 3450 }],
    ['at the plan charge without chosen amounts', { account: { ...waiting, planId: pro.id, planVariableAmounts: null }, plan: pro }, { kind: 'start', plan: pro, chosen: null, charge: 2000 }],
    ['a free plan starts without a charge', { account: { ...waiting, planId: free.id, planVariableAmounts: null }, plan: free }, { kind: 'start', charge: 0 }],
    ['a plan another link started already is left alone', { account: { ...waiting, planStatus: 'ACTIVE' as PlanStatus }, plan: seats }, { kind: 'none' }],
    ['while another link\'s start charge is pending, nothing is charged', { account: waiting, plan: seats, pendingPlanChargeId: 'ch_1' }, { kind: 'wait', chargeId: 'ch_1' }],
    ['an account without a plan is left alone', { account: { planId: null, planStatus: 'NONE' as PlanStatus, planVariableAmounts: null }, plan: null }, { kind: 'none' }],
  ];
  it.each(cases)('%s', (_, f, expected) => {
    expect(decidePendingPlanStart(f)).toEqual(expect.objectContaining(expected));
  });
});
