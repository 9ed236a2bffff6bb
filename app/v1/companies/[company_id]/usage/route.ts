import { withCompany, declareMethods } from '@/lib/api/route';
import { ownCompany } from '@/lib/api/company';
import { companyUsageQuery } from '@/lib/api/schemas/usage-query';
import { usageAnswer } from '@/lib/api/usage';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // GET /v1/companies/{company_id}/usage – the same over the company's accounts, or one of them (account_id)
  GET: withCompany({ query: companyUsageQuery }, async ({ db, company, params, query }) =>
    usageAnswer(db, { companyId: ownCompany(company, params.company_id).id, accountId: query.account_id ?? null }, query),
  ),
});
