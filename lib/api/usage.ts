import { withCompany } from './route';
import { ownCompany } from './company';
import { companyUsageQuery, usageQuery, type UsageQuery } from './schemas/usage-query';
import { now } from '../clock';
import { parseGroupBy, readUsage, serializeUsageRow } from '../billing/usage/usage';
import type { Db } from '../db/client';

async function answer(db: Db, companyId: string, accountId: string | null, query: UsageQuery) {
  const { rows } = await readUsage(db, {
    companyId,
    accountId,
    denomination: query.denomination ?? null,
    from: query.from ? new Date(query.from) : null,
    to: query.to ? new Date(query.to) : null,
    granularity: query.granularity,
    groupBy: parseGroupBy(query.group_by),
    now: now(),
  });
  return { data: rows.map(serializeUsageRow), hasMore: false };
}

/**
 * GET /v1/accounts/{account_id}/usage and GET /v1/companies/{company_id}/usage: one handler, the
 * account named by the path, or by `account_id` (optional) on the company's path.
 */
export function usageRoute(scope: 'account' | 'company') {
  return scope === 'account'
    ? withCompany({ query: usageQuery }, async ({ db, company, params, query }) => answer(db, company.id, params.account_id, query))
    : withCompany({ query: companyUsageQuery }, async ({ db, company, params, query }) => answer(db, ownCompany(company, params.company_id).id, query.account_id ?? null, query));
}
