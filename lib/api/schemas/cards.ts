import { z } from 'zod';

export const cardAttach = z.strictObject({ token: z.string({ error: 'must be a string' }).trim().min(1, 'must not be empty').max(255) });

/**
 * The hosted pages' card calls (public, behind a link's token): only a card token made by
 * Stripe.js in the customer's browser (`tok_...`), as the pages send. A payment method id would
 * let a link's holder ask about, and attach, payment methods of the company's processor account.
 */
export const hostedCardAttach = z.strictObject({
  token: z
    .string({ error: 'must be a string' })
    .trim()
    .min(1, 'must not be empty')
    .max(255)
    .regex(/^tok_[A-Za-z0-9_]+$/, 'must be a card token made by Stripe.js (tok_...)'),
  /** The plan start the page showed (its plan and what it said saving the card charges): a card is charged only that. */
  quote: z
    .strictObject({
      plan_id: z.string().max(64),
      charge: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
    })
    .optional(),
});
