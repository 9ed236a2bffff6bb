import { z } from 'zod';
import { denomination, nonNegativeUnits, positiveUnits } from './common';

/** A quantity's or property's name: 1 to 64 letters, digits and `_ . : -`. */
export const usageName = z.string().regex(/^[A-Za-z0-9_.:-]{1,64}$/, 'A name is 1 to 64 letters, digits, and . _ : -.');

export const MAX_QUANTITIES = 10;
export const MAX_PROPERTIES = 20;

/** A property value: a string (at most 200 characters), a finite JSON number, or a boolean. */
export const propertyValue = z.union([z.string().max(200, 'must be at most 200 characters'), z.number().finite(), z.boolean()], {
  error: 'must be a string, a number or a boolean',
});

/** `quantities`: name → decimal ≥ 0, at most 10 names. */
export const quantities = z
  .record(usageName, nonNegativeUnits, { error: 'must be an object of names to numbers' })
  .refine((q) => Object.keys(q).length <= MAX_QUANTITIES, `may name at most ${MAX_QUANTITIES} quantities`);

/** `properties`: a flat object, at most 20 keys. */
export const properties = z
  .record(usageName, propertyValue, { error: 'must be an object' })
  .refine((p) => Object.keys(p).length <= MAX_PROPERTIES, `may hold at most ${MAX_PROPERTIES} properties`);

/** How long a hold lasts, in seconds: 60 s to 7 days. */
export const expiresIn = z
  .number({ error: 'must be a number of seconds' })
  .int('must be a whole number of seconds')
  .min(60, 'must be at least 60 seconds')
  .max(604_800, 'must be at most 604800 seconds (7 days)');

const tier = z.strictObject({
  up_to: positiveUnits.nullable().describe('Upper bound of the tier (inclusive), ascending; null on the last tier only.'),
  unit_amount: nonNegativeUnits,
  flat_amount: nonNegativeUnits.optional(),
});

const component = z
  .strictObject({
    quantity: usageName.describe('Name of the event quantity this component prices (missing on an event: 0).'),
    unit_amount: nonNegativeUnits.optional(),
    tiers: z.array(tier).min(1, 'needs at least one tier').max(20, 'may have at most 20 tiers').optional().describe('Tiered price: up to 20 tiers, with tiers_mode.'),
    tiers_mode: z.enum(['graduated', 'volume'], { error: 'must be graduated or volume' }).optional().describe('graduated: each unit at the tier it falls in, counted per account since the plan period began; volume: the whole quantity at the tier it reaches.'),
    package: z.strictObject({ size: positiveUnits, amount: nonNegativeUnits }).optional().describe('Package price: ceil(quantity / size) × amount.'),
  })
  .superRefine((c, ctx) => {
    const kinds = (['unit_amount', 'tiers', 'package'] as const).filter((k) => c[k] !== undefined);
    if (kinds.length !== 1) {
      ctx.addIssue({ code: 'custom', message: `A component has exactly one price: unit_amount, tiers or package${kinds.length ? ` (it has ${kinds.join(' and ')})` : ''}.`, path: [] });
      return;
    }
    if (c.tiers !== undefined && c.tiers_mode === undefined) ctx.addIssue({ code: 'custom', message: 'is required with tiers: graduated or volume.', path: ['tiers_mode'] });
    if (c.tiers === undefined && c.tiers_mode !== undefined) ctx.addIssue({ code: 'custom', message: 'goes with tiers only.', path: ['tiers_mode'] });
    if (!c.tiers) return;
    const last = c.tiers.length - 1;
    c.tiers.forEach((t, i) => {
      if (t.up_to === null && i < last) ctx.addIssue({ code: 'custom', message: 'may be null only on the last tier.', path: ['tiers', i, 'up_to'] });
      if (t.up_to !== null && i === last) ctx.addIssue({ code: 'custom', message: 'must be null on the last tier (it has no upper bound).', path: ['tiers', i, 'up_to'] });
      const prev = c.tiers![i - 1]?.up_to;
      if (i > 0 && t.up_to !== null && prev !== null && prev !== undefined && Number(t.up_to) <= Number(prev)) {
        ctx.addIssue({ code: 'custom', message: `must be greater than the tier before's up_to (${prev}): tiers go in ascending order.`, path: ['tiers', i, 'up_to'] });
      }
    });
  })
  .transform((c) => {
    if (c.unit_amount !== undefined) return { quantity: c.quantity, unit_amount: c.unit_amount };
    if (c.package !== undefined) return { quantity: c.quantity, package: c.package };
    return {
      quantity: c.quantity,
      tiers_mode: c.tiers_mode!,
      tiers: c.tiers!.map((t) => ({ up_to: t.up_to, unit_amount: t.unit_amount, ...(t.flat_amount !== undefined && { flat_amount: t.flat_amount }) })),
    };
  });

/**
 * A billing rule: `{ type, denomination, amount?, filters?, components? }`. The first rule of an
 * event's type in plan order whose filters all match prices it (lib/billing/events/rate-card.ts).
 */
export const billingRule = z.strictObject({
  type: z.string().trim().min(1).max(200),
  denomination,
  amount: nonNegativeUnits.default('0'),
  filters: z
    .record(usageName, z.union([propertyValue, z.array(propertyValue).min(1, 'must list at least one value').max(20, 'may list at most 20 values')]), { error: 'must be an object' })
    .refine((f) => Object.keys(f).length <= MAX_PROPERTIES, `may test at most ${MAX_PROPERTIES} properties`)
    .optional()
    .describe("Property → value or array of values the event's properties must all match; the first rule of the type in plan order that matches prices the event."),
  components: z.array(component).max(10, 'a rule has at most 10 components').optional().describe('Prices by quantity (at most 10), added to amount: each has exactly one of unit_amount, tiers (with tiers_mode) or package.'),
});
