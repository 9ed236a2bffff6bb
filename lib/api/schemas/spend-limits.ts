import { z } from 'zod';
import { denomination, nonNegativeUnits } from './common';

export const spendLimit = z.strictObject({
  denomination,
  period: z.enum(['day', 'week', 'month'], { error: 'must be day, week or month' }),
  limit: nonNegativeUnits,
  action: z.enum(['reject', 'notify'], { error: 'must be reject or notify' }),
});

/** PUT /v1/accounts/{account_id}/spend_limits: every limit of the account ([] clears them); one per denomination, period and action. */
export const spendLimitsPut = z
  .array(spendLimit, { error: 'The body must be an array of spend limits.' })
  .max(100, 'An account has at most 100 spend limits.')
  .superRefine((limits, ctx) => {
    const seen = new Set<string>();
    for (const [i, l] of limits.entries()) {
      const k = `${l.denomination}\u0000${l.period}\u0000${l.action}`;
      if (seen.has(k)) ctx.addIssue({ code: 'custom', message: `names a second ${l.action} limit for ${l.denomination} per ${l.period}; send one.`, path: [i, 'period'] });
      seen.add(k);
    }
  });
