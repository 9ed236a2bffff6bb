import { withCompany, declareMethods } from '@/lib/api/route';
import { usageQuery } from '@/lib/api/schemas/usage-query';
import { now } from '@/lib/clock';
import { parseGroupBy, readUsage, serializeUsageRow } from '@/lib/billing/usage/usage';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // GET /v1/accounts/{account_id}/usage – completed events summed by hour, day or month, grouped by type or a property
  GET: withCompany({ query: usageQuery }, async ({ db, company, params, query }) => {
    const { rows } = await readUsage(db, {
      companyId: company.id,
      accountId: params.account_id,
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
