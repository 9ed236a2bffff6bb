import { z } from 'zod';
import { denomination } from './common';
import { iso } from './events';

export const granularity = z.enum(['hour', 'day', 'month'], { error: 'must be one of hour, day, month' });

export const usageQuery = z.strictObject({
  denomination: denomination.optional(),
  from: iso.optional(),
  to: iso.optional(),
  granularity: granularity.default('day'),
  // Read by parseGroupBy (lib/billing/usage), which names the parameter in its 400.
  group_by: z.string().regex(/^(type|property:.{1,100})$/, 'must be type or property:<name> (a name of 1 to 100 characters)').optional(),
});
export type UsageQuery = z.infer<typeof usageQuery>;

export const companyUsageQuery = usageQuery.extend({ account_id: z.string().min(1).optional() });
export type CompanyUsageQuery = z.infer<typeof companyUsageQuery>;
