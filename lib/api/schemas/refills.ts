import { z } from 'zod';
import { chargeCents, denomination, positiveUnits } from './common';

export const autoRefill = z
  .strictObject({
    amount: positiveUnits,
    usd_charge: chargeCents,
    refill_period: z.enum(['monthly'], { error: 'must be monthly' }).optional(),
    // A refill_threshold of 0 reads as "no threshold refill" (interface.md), so a threshold is above 0.
    threshold: positiveUnits.optional(),
  })
  .refine((v) => v.refill_period !== undefined || v.threshold !== undefined, {
    message: 'Send refill_period: "monthly" for a time-based refill or threshold for a threshold refill.',
    path: ['refill_period'],
  });

export const scheduledRefill = z.strictObject({ denomination, amount: positiveUnits, usd_charge: chargeCents });

export const modifyMidMonth = z.strictObject({
  account_id: z.string().optional(),
  denomination,
  amount: positiveUnits,
  usd_charge: chargeCents,
});
