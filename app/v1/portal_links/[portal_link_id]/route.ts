import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { now } from '@/lib/clock';
import { revokePortalLink, serializePortalLink } from '@/lib/billing/accounts/portal';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // DELETE /v1/portal_links/{portal_link_id} – revoke one customer portal link at once
  DELETE: withCompany({ atomic: true }, async ({ db, company, params }) =>
    ok(serializePortalLink(await revokePortalLink({ db, companyId: company.id, linkId: params.portal_link_id, now: now() })))),
});
