import { z } from 'zod';
import { denomination, email, idOf, metadata, nonEmpty, units } from './common';

/**
 * The company's own id for a customer, kept exactly as sent (an id is compared, not read).
 * An empty string, like null, means none: how a PATCH clears it.
 */
const externalId = z
  .string({ error: 'must be a string or null' })
  .max(255, 'must be at most 255 characters')
  .nullable()
  .transform((v) => (v === '' ? null : v));

export const accountCreate = z.strictObject({
  name: nonEmpty(200),
  email,
  metadata: metadata.optional(),
  external_id: externalId.optional(),
  processor_id: z.string().trim().min(1).max(255).optional(),
  plan_id: idOf('p').optional(),
  plan_variable_amounts: z.record(denomination, units, { error: 'must be an object of balance name to amount' }).optional(),
  // A guide page sends the number 1.
  enable_card_collector: z
    .union([z.boolean(), z.literal(1), z.literal(0)], { error: 'must be true or false' })
    .transform((v) => v === true || v === 1)
    .optional(),
  token: z.string().trim().min(1).max(255).optional(),
  billing_address_id: z.string().max(255).nullable().optional(),
});
export type AccountCreate = z.infer<typeof accountCreate>;

export const accountUpdate = z
  .strictObject({
    name: nonEmpty(200).optional(),
    email: email.optional(),
    metadata: metadata.optional(),
    billing_address_id: z.string().max(255).nullable().optional(),
    external_id: externalId.optional(),
  })
  .refine((v) => Object.keys(v).length > 0, 'Send at least one of name, email, metadata, billing_address_id, external_id.');
export type AccountUpdate = z.infer<typeof accountUpdate>;

export const accountListQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(1000, 'limit must be at most 1000').default(100),
  starting_after: z.string().min(1).optional(),
  email: z.string().optional(),
  external_id: z.string().min(1, 'must not be empty').max(255, 'must be at most 255 characters').optional(),
  search: z.string().max(200).optional(),
});
