import { z } from 'zod';
import { MAX_CHARGE_CENTS, MIN_CARD_CHARGE_CENTS, parseUnits, refusedCardAmount } from '../../money';
import { exactText, InexactNumber } from '../json';
import { DENOMINATION_RE } from '../../billing/balances/denomination';

export const denomination = z
  .string({ error: 'must be a string' })
  .regex(DENOMINATION_RE, 'A denomination is 1 to 64 letters, digits, and . _ : - (starting with a letter or digit).');

export const email = z.email({ error: 'must be a valid email address' }).max(320);

export const nonEmpty = (max = 500) => z.string().trim().min(1, 'must not be empty').max(max, `must be at most ${max} characters`);

export const metadata = z
  .record(z.string(), z.unknown(), { error: 'must be an object' })
  .refine((m) => JSON.stringify(m).length <= 16_384, 'metadata must be at most 16 KiB of JSON');

/**
 * A JSON number the body parse kept as text (a double would round it): read as that text. The
 * OpenAPI document leaves it out: the documented input is a number or a numeric string.
 */
export const exactNumber = z.instanceof(InexactNumber);

/** Units: a JSON number or numeric string, at most 12 decimals; returned as a canonical decimal string. */
export const units = z.union([z.number(), z.string(), exactNumber], { error: 'must be a number or a numeric string' }).transform((v, ctx) => {
  const parsed = parseUnits(exactText(v));
  if (parsed === null) {
    ctx.addIssue({ code: 'custom', message: 'must be a finite number with at most 12 decimals' });
    return z.NEVER;
  }
  return parsed;
});

export const nonNegativeUnits = units.refine((v) => !v.startsWith('-'), 'must not be negative');
export const positiveUnits = units.refine((v) => !v.startsWith('-') && Number(v) !== 0, 'must be greater than 0');

export { MAX_CHARGE_CENTS };

function centsUpTo(max: number, opts: { card?: boolean } = {}) {
  return z.union([z.number(), z.string(), exactNumber], { error: 'must be an integer number of cents' }).transform((v, ctx) => {
    const parsed = parseUnits(exactText(v));
    if (parsed === null || parsed.includes('.') || parsed.startsWith('-') || Number(parsed) > Number.MAX_SAFE_INTEGER) {
      ctx.addIssue({ code: 'custom', message: 'must be a non-negative integer number of USD cents' });
      return z.NEVER;
    }
    if (Number(parsed) > max) {
      ctx.addIssue({ code: 'custom', message: `must be at most ${max} cents ($999,999.99), the most one card payment can be` });
      return z.NEVER;
    }
    if (opts.card && refusedCardAmount(Number(parsed))) {
      ctx.addIssue({ code: 'custom', message: `must be 0 (free) or at least ${MIN_CARD_CHARGE_CENTS} cents ($0.50), the smallest card payment` });
      return z.NEVER;
    }
    return Number(parsed);
  });
}

/** USD cents: a non-negative integer (numeric strings accepted where the interface says so). */
export const cents = centsUpTo(Number.MAX_SAFE_INTEGER);
/** A USD price in cents that charges add up (overage per unit): at most what one card payment can be. */
export const priceCents = centsUpTo(MAX_CHARGE_CENTS);
/** USD cents charged to a card in one payment: 0 (free), or from the smallest card payment up to MAX_CHARGE_CENTS. */
export const chargeCents = centsUpTo(MAX_CHARGE_CENTS, { card: true });

export const idOf = (prefix: string) => z.string().regex(new RegExp(`^${prefix}_[A-Za-z0-9]+$`), `must be an id starting with ${prefix}_`);
