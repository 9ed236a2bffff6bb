import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { now } from '@/lib/clock';
import { portalLinkCreate } from '@/lib/api/schemas/portal';
import { getAccount } from '@/lib/billing/accounts/accounts';
import { createPortalLink } from '@/lib/billing/accounts/portal';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // POST /v1/accounts/{account_id}/portal_link – a fresh link to the account's customer portal
  POST: withCompany({ body: portalLinkCreate, optionalBody: true }, async ({ db, company, params, body }) => {
    const account = await getAccount({ db, companyId: company.id, accountId: params.account_id });
    const link = await createPortalLink({ db, accountId: account.id, now: now(), expiresIn: body?.expires_in });
    return ok({ id: link.id, url: link.url, expires_at: link.expiresAt.toISOString() });
  }),
});
