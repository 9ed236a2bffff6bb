import { z } from 'zod';
import { chargeCents, denomination, positiveUnits } from './common';
import { instant, priority } from './grants';

export const balanceCreate = z.strictObject({
  amount: positiveUnits.optional(),
  reason: z.string().trim().min(1).max(500).optional(),
});

export const deposit = z
  .strictObject({
    denomination: denomination.optional(),
    charge_against_denomination: denomination.optional(),
    amount_to_deposit: positiveUnits,
    amount_to_charge: chargeCents.default(0),
    reason: z.string().trim().min(1).max(500).optional(),
    expires_at: instant('expires_at').optional(),
    priority: priority.optional(),
  })
  .superRefine((v, ctx) => {
    if (!v.denomination && !v.charge_against_denomination) ctx.addIssue({ code: 'custom', message: 'denomination is required.', path: ['denomination'] });
    // Two names for one field: both may be sent only when they agree.
    if (v.denomination && v.charge_against_denomination && v.denomination !== v.charge_against_denomination) {
      ctx.addIssue({ code: 'custom', message: `charge_against_denomination names the same field as denomination, and says ${v.charge_against_denomination} where denomination says ${v.denomination}: send one of them.`, path: ['charge_against_denomination'] });
    }
  })
  .transform((v) => ({ denomination: (v.denomination ?? v.charge_against_denomination)!, amount: v.amount_to_deposit, charge: v.amount_to_charge, reason: v.reason, expiresAt: v.expires_at, priority: v.priority }));

export const ledgerQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(1000, 'limit must be at most 1000').default(100),
  starting_after: z.string().min(1).optional(),
  denomination: z.string().optional(),
});

export const denominationParam = denomination;
