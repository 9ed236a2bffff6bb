import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { now } from '@/lib/clock';
import { getAccount } from '@/lib/billing/accounts/accounts';
import { createPortalLink } from '@/lib/billing/accounts/portal';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // POST /v1/accounts/{account_id}/portal_link – a fresh link to the account's customer portal
  POST: withCompany({}, async ({ db, company, params }) => {
    const account = await getAccount({ db, companyId: company.id, accountId: params.account_id });
    const link = await createPortalLink({ db, accountId: account.id, now: now() });
    return ok({ url: link.url, expires_at: link.expiresAt.toISOString() });
  }),
});
