import { withCompany, declareMethods } from '@/lib/api/route';
import { usageQuery } from '@/lib/api/schemas/usage-query';
import { usageAnswer } from '@/lib/api/usage';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // GET /v1/accounts/{account_id}/usage – completed events summed by hour, day or month, grouped by type or a property
  GET: withCompany({ query: usageQuery }, async ({ db, company, params, query }) => usageAnswer(db, { companyId: company.id, accountId: params.account_id }, query)),
});
