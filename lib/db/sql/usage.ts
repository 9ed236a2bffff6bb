import { query, sql, type Db } from '../client';
import { idRange } from '../../ids';

export type Granularity = 'hour' | 'day' | 'month';

/** Which events a usage read covers: a company's, or one account's; one cost denomination or all. */
export type UsageScope = { companyId: string; accountId: string | null; denomination: string | null };

/** One bucket of one group and cost denomination ('' for events without a cost), sums exact. */
export type UsageSums = { start: string; grp: string | null; denomination: string; events: string | number; cost: string | null; quantities: Record<string, string> | string | null };

/**
 * Sums a source of rows `(start, grp, denomination, events, cost, quantities)` per bucket, group
 * and denomination, quantities per name. One pass over the source; at most `limit` rows.
 */
function summed(source: ReturnType<typeof sql>, limit: number) {
  return sql`with src as materialized (${source}),
    counts as (
      select start, grp, denomination, sum(events) as events, sum(cost) as cost from src group by 1, 2, 3
    ),
    sums as (
      select start, grp, denomination, jsonb_object_agg(key, total::text) as quantities
        from (
          select start, grp, denomination, q.key, sum(q.value::numeric) as total
            from src cross join lateral jsonb_each_text(case when jsonb_typeof(src.quantities) = 'object' then src.quantities else '{}'::jsonb end) q
            group by 1, 2, 3, 4
        ) k
        group by 1, 2, 3
    )
    select to_char(c.start at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as start, c.grp, c.denomination, c.events::text as events, c.cost::text as cost, s.quantities
      from counts c left join sums s on s.start = c.start and s.grp is not distinct from c.grp and s.denomination = c.denomination
      order by c.start, c.grp nulls last, c.denomination
      limit ${limit}`;
}

const bucket = (granularity: Granularity, column: string) => sql.raw(`date_trunc('${granularity}', ${column}, 'UTC')`);

/**
 * From the completed events of [from, to): grouped by type, or by the text of one property
 * (null when an event lacks it). A company's events are read through events_company_created, an
 * account's through events_account with the window's id range.
 */
export async function usageFromEvents(
  db: Db,
  scope: UsageScope,
  args: { from: Date; to: Date; granularity: Granularity; property: string | null; limit: number },
): Promise<UsageSums[]> {
  const { from, to } = args;
  const grp = args.property === null ? sql`type` : sql`properties ->> ${args.property}`;
  const { gte, lt } = idRange('ev', from, to);
  const where = scope.accountId
    ? sql`account_id = ${scope.accountId} and company_id = ${scope.companyId}${gte && lt ? sql` and id >= ${gte} and id < ${lt}` : sql``}`
    : sql`company_id = ${scope.companyId}`;
  const source = sql`select ${bucket(args.granularity, 'created_at')} as start, ${grp} as grp, coalesce(cost_denomination, '') as denomination,
      1 as events, cost_amount as cost, quantities
    from events
    where ${where} and state = 'complete'
      and created_at >= ${from.toISOString()}::timestamptz and created_at < ${to.toISOString()}::timestamptz
      ${scope.denomination === null ? sql`` : sql`and cost_denomination = ${scope.denomination}`}`;
  return query<UsageSums>(db, summed(source, args.limit));
}

/**
 * The same from the worker's hourly roll-up of [from, to), hour-aligned: by type from usage_hourly,
 * by a declared property from usage_hourly_properties.
 */
export async function usageFromRollUp(db: Db, scope: UsageScope, args: { from: Date; to: Date; granularity: Granularity; property: string | null; limit: number }): Promise<UsageSums[]> {
  const [table, grp, only] =
    args.property === null ? [sql`usage_hourly`, sql`type`, sql``] : [sql`usage_hourly_properties`, sql`value`, sql` and property = ${args.property}`];
  const source = sql`select ${bucket(args.granularity, 'hour')} as start, ${grp} as grp, denomination, events, cost, quantities
    from ${table}
    where company_id = ${scope.companyId} and account_id = ${scope.accountId ?? ''}${only}
      and hour >= ${args.from.toISOString()}::timestamptz and hour < ${args.to.toISOString()}::timestamptz
      ${scope.denomination === null ? sql`` : sql`and denomination = ${scope.denomination}`}`;
  return query<UsageSums>(db, summed(source, args.limit));
}
