import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { now } from '@/lib/clock';
import { getAccount } from '@/lib/billing/accounts/accounts';
import { revokeAccountPortalLinks } from '@/lib/billing/accounts/portal';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // POST /v1/accounts/{account_id}/portal_links/revoke – revoke every live portal link of the account
  POST: withCompany({ atomic: true }, async ({ db, company, params }) => {
    const account = await getAccount({ db, companyId: company.id, accountId: params.account_id });
    return ok({ account_id: account.id, revoked: await revokeAccountPortalLinks({ db, accountId: account.id, now: now() }) });
  }),
});
