import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { ownCompany } from '@/lib/api/company';
import { forgetCachedKeys } from '@/lib/api/credentials';
import { revokeApiKey, serializeApiKey } from '@/lib/billing/companies/companies';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // DELETE /v1/companies/{company_id}/api_keys/{key_id} – revoke a key at once
  DELETE: withCompany({}, async ({ db, company, params }) => {
    const key = await revokeApiKey({ db, companyId: ownCompany(company, params.company_id).id, keyId: params.key_id });
    forgetCachedKeys();
    return ok(serializeApiKey(key));
  }),
});
