import type { UsageQuery } from './schemas/usage-query';
import { now } from '../clock';
import { parseGroupBy, readUsage, serializeUsageRow } from '../billing/usage/usage';
import type { Db } from '../db/client';

/**
 * GET /v1/accounts/{account_id}/usage and GET /v1/companies/{company_id}/usage: one answer, for
 * the account the path names, or on the company's path for all its accounts or `account_id`.
 */
export async function usageAnswer(db: Db, scope: { companyId: string; accountId: string | null }, query: UsageQuery) {
  const { rows } = await readUsage(db, {
    ...scope,
    denomination: query.denomination ?? null,
    from: query.from ? new Date(query.from) : null,
    to: query.to ? new Date(query.to) : null,
    granularity: query.granularity,
    groupBy: parseGroupBy(query.group_by),
    now: now(),
  });
  return { data: rows.map(serializeUsageRow), hasMore: false };
}
