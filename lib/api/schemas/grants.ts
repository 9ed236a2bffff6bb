import { z } from 'zod';
import { GRANT_CATEGORIES } from '../../db/schema';
import { positiveUnits } from './common';

export const instant = (param: string) =>
  z.iso.datetime({ offset: true, error: `${param} must be an ISO 8601 time with its offset, like 2027-01-31T00:00:00Z` }).transform((v) => new Date(v));

export const priority = z.number({ error: 'must be an integer from 0 to 100' }).int('must be an integer from 0 to 100').min(0, 'must be at least 0').max(100, 'must be at most 100');

export const grantCreate = z
  .strictObject({
    amount: positiveUnits,
    category: z.enum(GRANT_CATEGORIES, { error: `must be one of ${GRANT_CATEGORIES.join(', ')}` }).default('promotional'),
    priority: priority.default(50),
    effective_at: instant('effective_at').optional(),
    expires_at: instant('expires_at').optional(),
    reason: z.string().trim().min(1).max(500).optional(),
  })
  .transform((v) => ({ amount: v.amount, category: v.category, priority: v.priority, effectiveAt: v.effective_at, expiresAt: v.expires_at, reason: v.reason }));

export const grantListQuery = z.strictObject({
  status: z.enum(['live', 'expired', 'voided', 'all'], { error: 'must be one of live, expired, voided, all' }).default('live'),
  limit: z.coerce.number().int().min(1).max(1000, 'limit must be at most 1000').default(100),
  starting_after: z.string().min(1).optional(),
});

/** A report's window: [from, to), 400 days at most; the last 30 days by default. */
export const reportWindow = z
  .strictObject({ from: instant('from').optional(), to: instant('to').optional() })
  .superRefine((v, ctx) => {
    // Runs even when a time was refused (it is then still the string sent): only two times compare.
    if (!(v.from instanceof Date) || !(v.to instanceof Date)) return;
    if (v.from.getTime() > v.to.getTime()) ctx.addIssue({ code: 'custom', message: 'from must not be after to.', path: ['from'] });
    if (v.to.getTime() - v.from.getTime() > 400 * 86_400_000) ctx.addIssue({ code: 'custom', message: 'A window is at most 400 days.', path: ['to'] });
  });
