import { z } from 'zod';
import { chargeCents, denomination, positiveUnits } from './common';

/** The one time-based refill period; both refill paths validate it alike. */
const refillPeriod = z.enum(['monthly'], { error: 'must be monthly' });

export const autoRefill = z
  .strictObject({
    amount: positiveUnits,
    usd_charge: chargeCents,
    refill_period: refillPeriod.optional(),
    // A refill_threshold of 0 reads as "no threshold refill" (interface.md), so a threshold is above 0.
    threshold: positiveUnits.optional(),
    // The paid grants the refills make expire this many days after each refill (left out: never).
    expires_after_days: z.number({ error: 'must be a whole number of days from 1 to 3650' }).int('must be a whole number of days from 1 to 3650').min(1, 'must be at least 1').max(3650, 'must be at most 3650').optional(),
    // At most this many threshold refills are charged per calendar month (UTC).
    max_charges_per_month: z.number({ error: 'must be a whole number from 1 to 1000' }).int('must be a whole number from 1 to 1000').min(1, 'must be at least 1').max(1000, 'must be at most 1000').optional(),
  })
  .refine((v) => v.max_charges_per_month === undefined || v.threshold !== undefined, {
    message: 'max_charges_per_month limits threshold refills: send it with threshold.',
    path: ['max_charges_per_month'],
  })
  .refine((v) => v.refill_period !== undefined || v.threshold !== undefined, {
    message: 'Send refill_period: "monthly" for a time-based refill or threshold for a threshold refill.',
    path: ['refill_period'],
  });

// The monthly refill is the one this path changes, so its period may be named or left out.
export const scheduledRefill = z.strictObject({ denomination, amount: positiveUnits, usd_charge: chargeCents, refill_period: refillPeriod.optional() });

export const modifyMidMonth = z.strictObject({
  account_id: z.string().optional(),
  denomination,
  amount: positiveUnits,
  usd_charge: chargeCents,
});
