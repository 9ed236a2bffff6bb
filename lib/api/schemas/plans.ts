import { z } from 'zod';
import { chargeCents, denomination, metadata, nonEmpty, nonNegativeUnits, priceCents } from './common';
import { billingRule } from './usage';

const PERIODS: Partial<Record<string, 'day' | 'week' | 'month' | 'year'>> = {
  day: 'day', daily: 'day', week: 'week', weekly: 'week', month: 'month', monthly: 'month', year: 'year', yearly: 'year', annual: 'year', annually: 'year',
};

const usd = z
  .string()
  .transform((s) => s.toUpperCase())
  .refine((s) => s === 'USD', 'only USD is supported')
  .transform(() => 'USD' as const);

const planBalance = z.strictObject({
  amount: nonNegativeUnits,
  denomination,
  overage_charge_amount: priceCents.optional(),
  overage_charge_denomination: usd.optional(),
  // USD cents per unit, may have decimals: makes this balance's amount choosable per account.
  variable_unit_price: nonNegativeUnits.optional(),
});

export const planCreate = z
  .strictObject({
    name: nonEmpty(200),
    charge_amount: chargeCents.default(0),
    charge_denomination: usd.default('USD'),
    billing_period: z
      .string()
      .transform((s) => (Object.hasOwn(PERIODS, s.toLowerCase()) ? PERIODS[s.toLowerCase()] : undefined))
      .refine((s) => Boolean(s), 'must be one of day, week, month, year')
      .default('month'),
    overage_charge_mode: z.enum(['postpay', 'none'], { error: 'must be postpay or none' }).default('none'),
    threshold_alert_percentage: nonNegativeUnits
      .refine((v) => Number(v) > 0 && Number(v) <= 100, 'must be between 0 and 100')
      .nullable()
      .optional(),
    balances: z.array(planBalance).max(50).default([]),
    billing_rules: z.array(billingRule).max(500).default([]),
    flags: z.record(z.string().min(1).max(100), z.boolean({ error: 'flag values must be true or false' })).default({}),
    metadata: metadata.optional(),
  })
  .superRefine((p, ctx) => {
    const seen = new Set<string>();
    p.balances.forEach((b, i) => {
      if (seen.has(b.denomination)) ctx.addIssue({ code: 'custom', message: 'Each plan balance needs its own denomination.', path: ['balances', i, 'denomination'] });
      seen.add(b.denomination);
    });
  });
export type PlanCreate = z.infer<typeof planCreate>;
