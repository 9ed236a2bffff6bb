import { describe, expect, it } from 'vitest';
import type { StoredRefillChange } from '../../db/schema';
import type { Charge } from '../charges/charges';
import {
  decideMidMonthChange,
  decidePeriodicRefill,
  decideRefillRemoval,
  decideRefillSetting,
  decideScheduledRefillChange,
  isBelowThreshold,
  REFILLS_OFF,
  type MidMonthFacts,
  type RefillConfig,
} from './refill-decision';

const at = (y: number, m: number, d: number, h = 12) => new Date(Date.UTC(y, m - 1, d, h));
const midnight = (y: number, m: number, d: number) => new Date(Date.UTC(y, m - 1, d));

describe('a monthly refill is due on the day it was set, and after the 28th on the 1st of the second following month', () => {
  // [set at, refill day, first refill due after the one charged at once]
  const cases: [Date, string, Date][] = [
    [at(2027, 1, 1), '1', midnight(2027, 2, 1)],
    [at(2027, 1, 15), '15', midnight(2027, 2, 15)],
    [at(2027, 1, 28), '28', midnight(2027, 2, 28)],
    [at(2027, 1, 29), '1', midnight(2027, 3, 1)],
    [at(2027, 1, 30), '1', midnight(2027, 3, 1)],
    [at(2027, 1, 31), '1', midnight(2027, 3, 1)],
    [at(2027, 2, 28), '28', midnight(2027, 3, 28)],
    [at(2028, 2, 28), '28', midnight(2028, 3, 28)],
    [at(2028, 2, 29), '1', midnight(2028, 4, 1)],
    [at(2027, 4, 30), '1', midnight(2027, 6, 1)],
    [at(2027, 3, 31), '1', midnight(2027, 5, 1)],
    [at(2027, 11, 30), '1', midnight(2028, 1, 1)],
    [at(2027, 12, 31, 23), '1', midnight(2028, 2, 1)],
    [at(2027, 12, 15, 0), '15', midnight(2028, 1, 15)],
  ];
  it.each(cases)('set at %s', (when, refillOnDay, next) => {
    const d = decideRefillSetting({ at: when, denomination: 'credits', config: { amount: '500', usd_charge: 2500, refill_period: 'monthly' } });
    expect(d).toEqual({
      kind: 'start_monthly',
      amount: '500',
      charge: 2500,
      description: 'Monthly refill of 500 credits (first)',
      columns: { refillAmount: '500', refillUsdAmount: 2500, refillThreshold: null, refillOnDay, nextPeriodicRefill: next, scheduledRefill: null, refillExpiresAfterDays: null, refillMaxChargesPerMonth: null },
    });
  });
});

describe('setting, turning off and scheduling refills', () => {
  it('a threshold refill is stored at once, charges nothing now and ends a monthly schedule', () => {
    expect(decideRefillSetting({ at: at(2027, 3, 10), denomination: 'credits', config: { amount: '100', usd_charge: 900, threshold: '10' } })).toEqual({
      kind: 'set_threshold',
      columns: { refillAmount: '100', refillUsdAmount: 900, refillThreshold: '10', refillOnDay: null, nextPeriodicRefill: null, scheduledRefill: null, refillExpiresAfterDays: null, refillMaxChargesPerMonth: null },
    });
  });
  it('keeps how many days the grants of its refills last', () => {
    expect(decideRefillSetting({ at: at(2027, 3, 10), denomination: 'credits', config: { amount: '100', usd_charge: 900, threshold: '10', expires_after_days: 30 } })).toMatchObject({
      kind: 'set_threshold',
      columns: { refillThreshold: '10', refillExpiresAfterDays: 30 },
    });
  });
  it('keeps how many threshold refills a month may charge; a monthly refill alone has no such limit', () => {
    expect(decideRefillSetting({ at: at(2027, 3, 10), denomination: 'credits', config: { amount: '100', usd_charge: 900, threshold: '10', max_charges_per_month: 3 } })).toMatchObject({
      kind: 'set_threshold',
      columns: { refillThreshold: '10', refillMaxChargesPerMonth: 3 },
    });
    expect(decideRefillSetting({ at: at(2027, 3, 10), denomination: 'credits', config: { amount: '100', usd_charge: 900, refill_period: 'monthly' } })).toMatchObject({
      kind: 'start_monthly',
      columns: { refillMaxChargesPerMonth: null },
    });
  });
  it('monthly and threshold together: the first refill is charged, both are stored with its units', () => {
    expect(decideRefillSetting({ at: at(2027, 3, 10), denomination: 'credits', config: { amount: '12.5', usd_charge: 300, refill_period: 'monthly', threshold: '15' } })).toMatchObject({
      kind: 'start_monthly',
      amount: '12.5',
      charge: 300,
      columns: { refillThreshold: '15', refillOnDay: '10', nextPeriodicRefill: midnight(2027, 4, 10) },
    });
  });
  it('the monthly setting already in effect is unchanged; any difference, or a scheduled change, is a new setting', () => {
    const inEffect = { refillAmount: '500.00', refillUsdAmount: 2500, refillThreshold: '50', nextPeriodicRefill: midnight(2027, 4, 10), scheduledRefill: null };
    const monthly = { amount: '500', usd_charge: 2500, refill_period: 'monthly' as const, threshold: '50.0' };
    const decide = (balance: typeof inEffect | Record<string, unknown>, config: RefillConfig = monthly) =>
      decideRefillSetting({ at: at(2027, 3, 13), denomination: 'credits', config, balance: balance as typeof inEffect }).kind;
    expect(decide(inEffect)).toBe('unchanged');
    expect(decide(inEffect, { ...monthly, amount: '500.01' })).toBe('start_monthly');
    expect(decide(inEffect, { ...monthly, usd_charge: 2501 })).toBe('start_monthly');
    expect(decide(inEffect, { amount: '500', usd_charge: 2500, refill_period: 'monthly' })).toBe('start_monthly');
    expect(decide({ ...inEffect, refillThreshold: null })).toBe('start_monthly');
    expect(decide({ ...inEffect, refillThreshold: null }, { amount: '500', usd_charge: 2500, refill_period: 'monthly' })).toBe('unchanged');
    // A threshold refill alone, or a monthly one with a decrease scheduled: not the setting sent.
    expect(decide({ ...inEffect, nextPeriodicRefill: null })).toBe('start_monthly');
    expect(decide({ ...inEffect, scheduledRefill: { amount: '100', usd_charge: 500 } })).toBe('start_monthly');
    expect(decide(inEffect, { amount: '500', usd_charge: 2500, threshold: '50' })).toBe('set_threshold');
  });
  it('a free monthly refill is a 0-cent charge', () => {
    expect(decideRefillSetting({ at: at(2027, 3, 10), denomination: 'credits', config: { amount: '7', usd_charge: 0, refill_period: 'monthly' } })).toMatchObject({ kind: 'start_monthly', charge: 0 });
  });

  // [available = amount − held, threshold, wants a refill now]
  const thresholds: [string, string, string | null | undefined, boolean][] = [
    ['50', '0', '10', false],
    ['50', '45', '10', true],
    ['50', '40', '10', false],
    ['9.999999999999', '0', '10', true],
    ['-3', '0', '0', true],
    ['5', '0', null, false],
    ['5', '0', undefined, false],
  ];
  it.each(thresholds)('balance %s with %s held against threshold %s: below is %s', (amount, pending, threshold, below) => {
    expect(isBelowThreshold({ amount, pending }, threshold)).toBe(below);
  });

  it('turning refills off clears every refill column; a missing balance is 404', () => {
    expect(decideRefillRemoval({ balance: { id: 'b_1' } })).toEqual({ kind: 'turn_off', columns: REFILLS_OFF });
    expect(decideRefillRemoval({ balance: null })).toMatchObject({ kind: 'conflict', error: { status: 404, param: 'denomination' } });
  });

  it('a scheduled change, a decrease too, takes effect at the next monthly refill', () => {
    expect(decideScheduledRefillChange({ balance: { nextPeriodicRefill: midnight(2027, 4, 10) }, input: { amount: '60', usd_charge: 700 } })).toEqual({
      kind: 'schedule',
      change: { amount: '60', usd_charge: 700, effective_at: '2027-04-10T00:00:00.000Z' },
    });
    expect(decideScheduledRefillChange({ balance: { nextPeriodicRefill: null }, input: { amount: '60', usd_charge: 700 } })).toMatchObject({ kind: 'conflict', error: { status: 400, param: 'denomination' } });
    expect(decideScheduledRefillChange({ balance: null, input: { amount: '60', usd_charge: 700 } })).toMatchObject({ kind: 'conflict', error: { status: 404 } });
  });
});

describe('a due monthly refill', () => {
  const balance = { denomination: 'credits', refillAmount: '100', refillUsdAmount: 1000, scheduledRefill: null as StoredRefillChange | null };
  const due = '2027-04-10T00:00:00.000Z';
  const cases: [string, Parameters<typeof decidePeriodicRefill>[0], object][] = [
    ['refills the set amount for the set charge', { balance, due }, { kind: 'refill', amount: '100', charge: 1000, applyScheduled: false, description: 'Monthly refill of 100 credits' }],
    ['takes a change scheduled for this refill first', { balance: { ...balance, scheduledRefill: { amount: '60', usd_charge: 700, effective_at: due } }, due }, { kind: 'refill', amount: '60', charge: 700, applyScheduled: true }],
    ['leaves a change scheduled after it was queued for the following refill', { balance: { ...balance, scheduledRefill: { amount: '60', usd_charge: 700, effective_at: '2027-05-10T00:00:00.000Z' } }, due }, { kind: 'refill', amount: '100', charge: 1000, applyScheduled: false }],
    ['takes a change without a date at once', { balance: { ...balance, scheduledRefill: { amount: '60', usd_charge: 700 } as StoredRefillChange }, due }, { kind: 'refill', amount: '60', applyScheduled: true }],
    ['does nothing when refills were turned off meanwhile', { balance: { ...balance, refillAmount: null }, due }, { kind: 'skip' }],
    ['does nothing for a balance that is gone', { balance: null, due }, { kind: 'skip' }],
  ];
  it.each(cases)('%s', (_, facts, expected) => {
    expect(decidePeriodicRefill(facts)).toMatchObject(expected);
  });
});

/** A balance with a monthly refill of `refill` units for `usd` cents, holding `amount` units of which `pending` are held. */
function midMonth(input: { amount: string; usd_charge: number }, b: { amount: string; pending?: string; refill?: string; usd?: number | null } | null, when = at(2027, 3, 20)): MidMonthFacts {
  return {
    at: when,
    accountId: 'a_1',
    input: { denomination: 'credits', ...input },
    balance: b && { amount: b.amount, pending: b.pending ?? '0', refillAmount: b.refill ?? '100', refillUsdAmount: b.usd === undefined ? 1000 : b.usd, nextPeriodicRefill: midnight(2027, 4, 10) },
    earlier: null,
  };
}

describe('modifymidmonth credits the cancelled units at the old unit price and charges the rest, to the cent and to the unit', () => {
  // [what, facts, units cancelled, credit, charge]
  const cases: [string, MidMonthFacts, string, number, number][] = [
    ['all 100 units left at 10 cents each: 200 for 1500 costs 1500 − 1000', midMonth({ amount: '200', usd_charge: 1500 }, { amount: '100' }), '100', 1000, 500],
    ['the next increase: 200 left at 7.5 cents each, 300 for 1800 costs 1800 − 1500', midMonth({ amount: '300', usd_charge: 1800 }, { amount: '200', refill: '200', usd: 1500 }), '200', 1500, 300],
    ['40 of 100 left: 400 credited', midMonth({ amount: '200', usd_charge: 1500 }, { amount: '40' }), '40', 400, 1100],
    ['units held by pending events are spoken for: 100 − 30 held = 70 credited', midMonth({ amount: '200', usd_charge: 1500 }, { amount: '100', pending: '30' }), '70', 700, 800],
    ['more held than there is: nothing to credit', midMonth({ amount: '200', usd_charge: 1500 }, { amount: '20', pending: '35' }), '0', 0, 1500],
    ['a negative balance: nothing to credit', midMonth({ amount: '200', usd_charge: 1500 }, { amount: '-5' }), '0', 0, 1500],
    ['units from elsewhere are not cancelled: at most one refill, 100 of 250', midMonth({ amount: '200', usd_charge: 1500 }, { amount: '250' }), '100', 1000, 500],
    ['a third of a cent rounds down: 1 of 3 units for 100 cents = 33.33 → 33', midMonth({ amount: '6', usd_charge: 200 }, { amount: '1', refill: '3', usd: 100 }), '1', 33, 167],
    ['two thirds round up: 2 of 3 units for 100 cents = 66.67 → 67', midMonth({ amount: '6', usd_charge: 200 }, { amount: '2', refill: '3', usd: 100 }), '2', 67, 133],
    ['a half cent rounds up: 1 of 2 units for 101 cents = 50.5 → 51', midMonth({ amount: '4', usd_charge: 300 }, { amount: '1', refill: '2', usd: 101 }), '1', 51, 249],
    ['fractional units: 2.5 of 12.5 units for 300 cents = 60', midMonth({ amount: '25', usd_charge: 500 }, { amount: '2.5', refill: '12.5', usd: 300 }), '2.5', 60, 440],
    ['twelve decimals: 0.000000000001 of 1 unit for 100 cents is worth nothing', midMonth({ amount: '2', usd_charge: 150 }, { amount: '0.000000000001', refill: '1', usd: 100 }), '0.000000000001', 0, 150],
    ['a free refill leaves nothing to credit', midMonth({ amount: '200', usd_charge: 1500 }, { amount: '100', usd: 0 }), '100', 0, 1500],
    ['a refill without a stored charge counts as free', midMonth({ amount: '200', usd_charge: 1500 }, { amount: '100', usd: null }), '100', 0, 1500],
    ['more units for the same charge: the unused ones pay for part of it', midMonth({ amount: '150', usd_charge: 1000 }, { amount: '60' }), '60', 600, 400],
  ];
  it.each(cases)('%s', (_, f, remaining, credit, charge) => {
    const d = decideMidMonthChange(f);
    expect(d).toMatchObject({ kind: 'increase', remaining, credit, charge });
    if (d.kind === 'increase') {
      expect(d.charge).toBe(Math.max(0, f.input.usd_charge - d.credit));
      expect(d.description).toBe(`Mid-month change to ${f.input.amount} credits for ${f.input.usd_charge} cents less ${credit} cents for ${remaining} cancelled units`);
    }
  });

  it('the new refill starts today: the refill day moves by the day-of-month rule and a threshold is kept', () => {
    const mid = decideMidMonthChange(midMonth({ amount: '200', usd_charge: 1500 }, { amount: '100' }, at(2027, 6, 15)));
    expect(mid).toMatchObject({ kind: 'increase', columns: { refillAmount: '200', refillUsdAmount: 1500, refillOnDay: '15', nextPeriodicRefill: midnight(2027, 7, 15), scheduledRefill: null } });
    if (mid.kind === 'increase') expect(mid.columns).not.toHaveProperty('refillThreshold');
    expect(decideMidMonthChange(midMonth({ amount: '200', usd_charge: 1500 }, { amount: '100' }, at(2027, 1, 30)))).toMatchObject({ columns: { refillOnDay: '1', nextPeriodicRefill: midnight(2027, 3, 1) } });
    expect(decideMidMonthChange(midMonth({ amount: '200', usd_charge: 1500 }, { amount: '100' }, at(2028, 2, 29)))).toMatchObject({ columns: { refillOnDay: '1', nextPeriodicRefill: midnight(2028, 4, 1) } });
  });
});

describe('every other mid-month change', () => {
  const earlier = { id: 'ch_1', accountId: 'a_1', amount: 500, metadata: { effects: [{ kind: 'refill', balance_id: 'b_1', amount: '200', description: '', periodic: true, credit: 1000 }] } } as unknown as Charge;
  const cases: [string, MidMonthFacts, object][] = [
    ['a retried request carries on with its first charge and shows its credit again, whatever the balance now says', { ...midMonth({ amount: '200', usd_charge: 1500 }, { amount: '200', refill: '200', usd: 1500 }), earlier }, { kind: 'resume', charge: earlier, credit: 1000 }],
    ["another account's charge under the same key is not resumed", { ...midMonth({ amount: '200', usd_charge: 1500 }, { amount: '100' }), earlier: { ...earlier, accountId: 'a_2' } }, { kind: 'increase', credit: 1000 }],
    ['the same amount is not an increase', midMonth({ amount: '100', usd_charge: 1500 }, { amount: '100' }), { kind: 'conflict', error: { status: 400, param: 'amount', message: expect.stringMatching(/only increases/) } }],
    ['fewer units is a decrease, scheduled through auto_refill instead', midMonth({ amount: '50', usd_charge: 1500 }, { amount: '100' }), { kind: 'conflict', error: { status: 400, param: 'amount', message: expect.stringMatching(/auto_refill/) } }],
    ['more units for less money is refused', midMonth({ amount: '200', usd_charge: 999 }, { amount: '100' }), { kind: 'conflict', error: { status: 400, param: 'amount' } }],
    ['a balance without a monthly refill', { ...midMonth({ amount: '200', usd_charge: 1500 }, { amount: '100' }), balance: { amount: '100', pending: '0', refillAmount: '100', refillUsdAmount: 1000, nextPeriodicRefill: null } }, { kind: 'conflict', error: { status: 400, param: 'denomination' } }],
    ['a balance without any refill', { ...midMonth({ amount: '200', usd_charge: 1500 }, { amount: '100' }), balance: { amount: '100', pending: '0', refillAmount: null, refillUsdAmount: null, nextPeriodicRefill: null } }, { kind: 'conflict', error: { status: 400 } }],
    ['a balance that does not exist', midMonth({ amount: '200', usd_charge: 1500 }, null), { kind: 'conflict', error: { status: 404, param: 'denomination' } }],
  ];
  it.each(cases)('%s', (_, f, expected) => {
    expect(decideMidMonthChange(f)).toMatchObject(expected);
  });
});
