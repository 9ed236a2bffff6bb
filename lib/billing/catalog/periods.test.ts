import { describe, expect, it } from 'vitest';
import { addMonths, computeOverage, computePeriodEnd, computePlanCharge, computeProrationCredit, includedAmounts } from './periods';

const d = (s: string) => new Date(s);
const iso = (x: Date) => x.toISOString().slice(0, 10);

describe('period arithmetic', () => {
  it('keeps the anchor day and clamps to month ends without drifting', () => {
    const jan31 = d('2027-01-31T10:00:00Z');
    expect([1, 2, 3, 4, 12, 13].map((n) => iso(computePeriodEnd(jan31, 'month', n)))).toEqual(['2027-02-28', '2027-03-31', '2027-04-30', '2027-05-31', '2028-01-31', '2028-02-29']);
    expect(computePeriodEnd(jan31, 'month', 1).toISOString()).toBe('2027-02-28T10:00:00.000Z');
  });

  it('handles the 29th and 30th in leap and common years', () => {
    expect(iso(addMonths(d('2028-01-29T00:00:00Z'), 1))).toBe('2028-02-29');
    expect(iso(addMonths(d('2027-01-29T00:00:00Z'), 1))).toBe('2027-02-28');
    expect(iso(addMonths(d('2027-01-30T00:00:00Z'), 1))).toBe('2027-02-28');
    expect(iso(addMonths(d('2027-01-30T00:00:00Z'), 2))).toBe('2027-03-30');
    expect(iso(addMonths(d('2027-12-15T00:00:00Z'), 1))).toBe('2028-01-15');
  });

  it('renews yearly plans on Feb 28 after a Feb 29 start, and back on Feb 29 four years later', () => {
    const leap = d('2028-02-29T00:00:00Z');
    expect(iso(computePeriodEnd(leap, 'year', 1))).toBe('2029-02-28');
    expect(iso(computePeriodEnd(leap, 'year', 4))).toBe('2032-02-29');
  });

  it('adds days and weeks exactly', () => {
    const start = d('2027-03-13T12:00:00Z');
    expect(computePeriodEnd(start, 'day', 3).toISOString()).toBe('2027-03-16T12:00:00.000Z');
    expect(computePeriodEnd(start, 'week', 2).toISOString()).toBe('2027-03-27T12:00:00.000Z');
  });
});

describe('money for plans', () => {
  it('credits unused time in whole cents, rounding half up', () => {
    // 30-day period, 10 days used: 2/3 of 1000 cents = 666.67 → 667
    expect(computeProrationCredit({ charge: 1000, periodStart: d('2027-04-01T00:00:00Z'), periodEnd: d('2027-05-01T00:00:00Z'), at: d('2027-04-11T00:00:00Z') })).toBe(667);
    // exactly half of 999 = 499.5 → 500
    expect(computeProrationCredit({ charge: 999, periodStart: d('2027-04-01T00:00:00Z'), periodEnd: d('2027-04-03T00:00:00Z'), at: d('2027-04-02T00:00:00Z') })).toBe(500);
    expect(computeProrationCredit({ charge: 999, periodStart: d('2027-04-01T00:00:00Z'), periodEnd: d('2027-04-03T00:00:00Z'), at: d('2027-04-05T00:00:00Z') })).toBe(0);
    expect(computeProrationCredit({ charge: 999, periodStart: d('2027-04-01T00:00:00Z'), periodEnd: d('2027-04-03T00:00:00Z'), at: d('2027-03-01T00:00:00Z') })).toBe(999);
    // February in a leap year: 29 days, 1 used, 2900 cents → 2800
    expect(computeProrationCredit({ charge: 2900, periodStart: d('2028-02-01T00:00:00Z'), periodEnd: d('2028-03-01T00:00:00Z'), at: d('2028-02-02T00:00:00Z') })).toBe(2800);
  });

  it('prices chosen amounts of variable balances', () => {
    const plan = { chargeAmount: 1000, balances: [{ denomination: 'seats', amount: '5', variable_unit_price: '250' }, { denomination: 'tokens', amount: '1000', variable_unit_price: '0.015' }, { denomination: 'gb', amount: '10', variable_unit_price: null }] };
    expect(computePlanCharge(plan, null)).toBe(1000);
    expect(computePlanCharge(plan, { seats: '8' })).toBe(1750);
    // 1000 + (1033 − 1000) × 0.015 = 1000.495 → 1000 ; (1034−1000)×0.015 = 0.51 → 1001
    expect(computePlanCharge(plan, { tokens: '1033' })).toBe(1000);
    expect(computePlanCharge(plan, { tokens: '1034' })).toBe(1001);
    expect(computePlanCharge(plan, { seats: '0' })).toBe(0);
    expect(includedAmounts(plan, { seats: '8', gb: '99' })).toEqual([
      { denomination: 'seats', amount: '8' },
      { denomination: 'tokens', amount: '1000' },
      { denomination: 'gb', amount: '10' },
    ]);
  });

  it('bills postpaid overage per unit below zero', () => {
    expect(computeOverage('-12.5', 3)).toBe(38);
    expect(computeOverage('0', 3)).toBe(0);
    expect(computeOverage('4', 3)).toBe(0);
    expect(computeOverage('-7', 0)).toBe(0);
  });
});
