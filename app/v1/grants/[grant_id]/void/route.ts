import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { now } from '@/lib/clock';
import { serializeGrant, voidGrant } from '@/lib/billing/balances/grants';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // POST /v1/grants/{grant_id}/void – takes away what is left of a grant (a voided one is answered as it is)
  POST: withCompany({ atomic: true }, async ({ db, company, params }) => {
    const at = now();
    return ok(serializeGrant(await voidGrant(db, { companyId: company.id, grantId: params.grant_id }, at), at));
  }),
});
