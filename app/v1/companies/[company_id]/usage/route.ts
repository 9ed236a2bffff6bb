import { withCompany, declareMethods } from '@/lib/api/route';
import { ownCompany } from '@/lib/api/company';
import { companyUsageQuery } from '@/lib/api/schemas/usage-query';
import { now } from '@/lib/clock';
import { parseGroupBy, readUsage, serializeUsageRow } from '@/lib/billing/usage/usage';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // GET /v1/companies/{company_id}/usage – the same over the company's accounts, or one of them (account_id)
  GET: withCompany({ query: companyUsageQuery }, async ({ db, company, params, query }) => {
    const { rows } = await readUsage(db, {
      companyId: ownCompany(company, params.company_id).id,
      accountId: query.account_id ?? null,
      denomination: query.denomination ?? null,
      from: query.from ? new Date(query.from) : null,
      to: query.to ? new Date(query.to) : null,
      granularity: query.granularity,
      groupBy: parseGroupBy(query.group_by),
      now: now(),
    });
    return { data: rows.map(serializeUsageRow), hasMore: false };
  }),
});
