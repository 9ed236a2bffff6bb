import { z } from 'zod';
import { chargeCents, denomination, positiveUnits } from './common';
import { PORTAL_LINK_TTL_S } from '../../billing/accounts/portal-limits';

const { min, max } = PORTAL_LINK_TTL_S;

/** POST /v1/accounts/{account_id}/portal_link: how long the link works. */
export const portalLinkCreate = z.strictObject({
  expires_in: z
    .int({ error: 'must be a whole number of seconds' })
    .min(min, `must be at least ${min} seconds (5 minutes)`)
    .max(max, `must be at most ${max} seconds (24 hours)`)
    .optional(),
});

/** A credit package the customer portal offers: units of one denomination for whole USD cents, charged to the card on file. */
export const portalTopup = z.strictObject({
  denomination,
  amount_to_deposit: positiveUnits,
  amount_to_charge: chargeCents.refine((v) => v > 0, 'must be at least 50 cents ($0.50): a top-up is paid'),
});

/** The most packages a company offers: the portal lists them all as buttons. */
export const MAX_PORTAL_TOPUPS = 10;

/** The most properties a company's usage is rolled up by: each one adds rows to every hour's roll-up. */
export const MAX_USAGE_PROPERTIES = 5;

/** Names of event properties, as group_by=property:<name> takes them. */
export const usageProperties = z
  .array(z.string({ error: 'must be a property name' }).min(1, 'must be a property name of 1 to 100 characters').max(100, 'must be a property name of 1 to 100 characters'), {
    error: 'must be an array of property names',
  })
  .max(MAX_USAGE_PROPERTIES, `must hold at most ${MAX_USAGE_PROPERTIES} property names`)
  .superRefine((list, ctx) => {
    list.forEach((name, i) => {
      if (list.indexOf(name) !== i) ctx.addIssue({ code: 'custom', message: `${JSON.stringify(name)} is listed twice`, path: [i] });
    });
  });

/** PATCH /v1/companies/{company_id}: the settings a company changes itself. */
export const companyUpdate = z
  .strictObject({
    portal_topups: z
      .array(portalTopup, { error: 'must be an array of packages' })
      .max(MAX_PORTAL_TOPUPS, `must hold at most ${MAX_PORTAL_TOPUPS} packages`)
      .superRefine((list, ctx) => {
        const seen = new Set<string>();
        list.forEach((t, i) => {
          const key = JSON.stringify([t.denomination, t.amount_to_deposit, t.amount_to_charge]);
          if (seen.has(key)) ctx.addIssue({ code: 'custom', message: 'the same package is listed twice', path: [i] });
          seen.add(key);
        });
      })
      .optional(),
    usage_properties: usageProperties.optional(),
  })
  .refine((v) => v.portal_topups !== undefined || v.usage_properties !== undefined, {
    message: 'Send at least one setting to change: portal_topups or usage_properties.',
    path: ['portal_topups'],
  });
export type CompanyUpdate = z.infer<typeof companyUpdate>;

/** POST /portal/{token}/topup: the package the page showed, and the page's key for this purchase (a resubmit with it never pays twice). */
export const portalTopupPurchase = portalTopup.extend({
  key: z.string({ error: 'must be a string' }).regex(/^[A-Za-z0-9_-]{16,64}$/, 'must be 16 to 64 letters, digits, _ or -'),
});

/** POST /portal/{token}/refill: turn the balance's threshold refill on or off. */
export const portalRefillSwitch = z.strictObject({ denomination, on: z.boolean({ error: 'must be true or false' }) });
