import { z } from 'zod';
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
