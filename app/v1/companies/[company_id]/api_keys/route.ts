import { list, ok, withCompany, declareMethods } from '@/lib/api/route';
import { ownCompany } from '@/lib/api/company';
import { listQuery } from '@/lib/api/pagination';
import { issueApiKey, listApiKeys, serializeApiKey } from '@/lib/billing/companies/companies';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // POST /v1/companies/{company_id}/api_keys – issue a further key, shown once
  POST: withCompany({ atomic: true }, async ({ db, company, params }) => {
    const { key, secret } = await issueApiKey({ db, companyId: ownCompany(company, params.company_id).id });
    return ok({ ...serializeApiKey(key), api_key: secret });
  }),

  // GET /v1/companies/{company_id}/api_keys – keys without their secrets
  GET: withCompany({ query: listQuery }, async ({ db, company, params, query }) =>
    list(await listApiKeys({ db, companyId: ownCompany(company, params.company_id).id, page: query }), serializeApiKey),
  ),
});
