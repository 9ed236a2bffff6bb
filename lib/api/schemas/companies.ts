import { z } from 'zod';
import { email, nonEmpty } from './common';
import { MIN_PASSWORD_LENGTH } from '../../password-policy';

export const companyCreate = z.strictObject({
  name: nonEmpty(200),
  email,
  processor_key: z
    .string()
    .regex(/^(sk|rk)_(test|live)_[A-Za-z0-9_]+$/, 'must be a Stripe secret (sk_...) or restricted (rk_...) key')
    .optional(),
  processor_publishable_key: z.string().regex(/^pk_(test|live)_[A-Za-z0-9_]+$/, 'must be a Stripe publishable key (pk_...)').optional(),
  password: z.string().min(MIN_PASSWORD_LENGTH, `must be at least ${MIN_PASSWORD_LENGTH} characters`).max(200, 'must be at most 200 characters').optional(),
});
export type CompanyCreate = z.infer<typeof companyCreate>;
