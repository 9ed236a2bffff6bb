import { z } from 'zod';
import { email, nonEmpty } from './common';

export const companyCreate = z.strictObject({
  name: nonEmpty(200),
  email,
  processor_key: z
    .string()
    .regex(/^(sk|rk)_(test|live)_[A-Za-z0-9_]+$/, 'must be a Stripe secret (sk_...) or restricted (rk_...) key')
    .optional(),
  processor_publishable_key: z.string().regex(/^pk_(test|live)_[A-Za-z0-9_]+$/, 'must be a Stripe publishable key (pk_...)').optional(),
  password: z.string().min(8, 'must be at least 8 characters').max(200).optional(),
});
export type CompanyCreate = z.infer<typeof companyCreate>;
