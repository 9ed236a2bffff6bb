import { query, sql, type Db } from './client';
import { idRange } from '../ids';
import { SETTLE_MS } from './hourly-totals';

const HOUR_MS = 3600_000;
/**
 * Hours per transaction: a backlog (the first start on a database with history, a worker stopped
 * for days) drains a week at a time, about 0.8 million events per transaction at 10 million
 * events in 90 days.
 */
const HOURS_PER_RUN = 7 * 24;
const MARK = 'usage_hourly';

/** The closed hours usage_hourly holds for every company and account: [from, until), hour-aligned epoch ms. */
export type RolledUsage = { from: number; until: number };

export async function rolledUsage(db: Db): Promise<RolledUsage | null> {
  const [row] = await query<{ value: RolledUsage | null }>(db, sql`select value from settings where key = ${MARK}`);
  return row?.value?.until !== undefined && row.value.from !== undefined ? row.value : null;
}

function idHint(from: Date, to: Date) {
  const { gte, lt } = idRange('ev', from, to);
  return gte && lt ? sql` and id >= ${gte} and id < ${lt}` : sql``;
}

/**
 * Counts [from, to) again from the completed events, replacing what usage_hourly held for those
 * hours: per account, hour, type and cost denomination, and the same over all of a company's
 * accounts (account_id ''); running it twice leaves the same rows.
 */
export async function recountUsage(db: Db, from: Date, to: Date): Promise<void> {
  const f = from.toISOString();
  const t = to.toISOString();
  await query(db, sql`delete from usage_hourly where hour >= ${f}::timestamptz and hour < ${t}::timestamptz`);
  await query(
    db,
    sql`with ev as materialized (
        select company_id, account_id, date_trunc('hour', created_at, 'UTC') as hour, type, coalesce(cost_denomination, '') as denomination, cost_amount, quantities
          from events
          where state = 'complete' and created_at >= ${f}::timestamptz and created_at < ${t}::timestamptz ${idHint(from, to)}
      ),
      counts as (
        select company_id, account_id, hour, type, denomination, count(*) as events, sum(cost_amount) as cost
          from ev group by 1, 2, 3, 4, 5
      ),
      sums as (
        select company_id, account_id, hour, type, denomination, q.key, sum(q.value::numeric) as total
          from ev cross join lateral jsonb_each_text(case when jsonb_typeof(ev.quantities) = 'object' then ev.quantities else '{}'::jsonb end) q
          group by 1, 2, 3, 4, 5, 6
      ),
      account_quantities as (
        select company_id, account_id, hour, type, denomination, jsonb_object_agg(key, total::text) as quantities
          from sums group by 1, 2, 3, 4, 5
      ),
      company_quantities as (
        select company_id, hour, type, denomination, jsonb_object_agg(key, total::text) as quantities
          from (select company_id, hour, type, denomination, key, sum(total) as total from sums group by 1, 2, 3, 4, 5) k
          group by 1, 2, 3, 4
      ),
      per_company as (
        select company_id, hour, type, denomination, sum(events)::bigint as events, sum(cost) as cost from counts group by 1, 2, 3, 4
      )
      insert into usage_hourly (company_id, account_id, hour, type, denomination, events, cost, quantities)
      select c.company_id, c.account_id, c.hour, c.type, c.denomination, c.events, c.cost, q.quantities
        from counts c left join account_quantities q using (company_id, account_id, hour, type, denomination)
      union all
      select p.company_id, '', p.hour, p.type, p.denomination, p.events, p.cost, q.quantities
        from per_company p left join company_quantities q using (company_id, hour, type, denomination)`,
  );
}

/**
 * The worker's task: adds the hours closed since the last run, a week at most in each transaction
 * with the mark that says how far the table reaches (the mark's row lock keeps two workers from
 * rolling up at once). The first run starts at the oldest event's hour, so every report of closed
 * hours can be read from the table. Returns the number of hours added.
 */
export async function rollUpUsage(db: Db, now: Date, opts: { stopping?: () => boolean } = {}): Promise<number> {
  let hours = 0;
  for (;;) {
    const added = await rollUpWeek(db, now);
    hours += added;
    if (!added || opts.stopping?.()) return hours;
  }
}

/** When the next hour closes that the table does not hold yet (null before the first roll-up). */
export async function nextUsageRollUp(db: Db, _after: Date): Promise<Date | null> {
  const known = await rolledUsage(db);
  return known ? new Date(known.until + HOUR_MS + SETTLE_MS) : null;
}

async function rollUpWeek(db: Db, now: Date): Promise<number> {
  let closedBefore = Math.floor((now.getTime() - SETTLE_MS) / HOUR_MS) * HOUR_MS;
  // Most runs find no newly closed hour: one read, no transaction.
  const known = await rolledUsage(db);
  if (known && known.until >= closedBefore) return 0;
  return db.transaction(async (tx) => {
    await query(tx, sql`insert into settings (key, value) values (${MARK}, '{}'::jsonb) on conflict (key) do nothing`);
    const [row] = await query<{ value: Partial<RolledUsage> }>(tx, sql`select value from settings where key = ${MARK} for update`);
    const mark = row.value;
    // An hour with a hold still pending is not closed, however long ago it was: its event may yet
    // complete and count in that hour (a hold may outlive the settling time).
    const [held] = await query<{ at: string | Date | null }>(tx, sql`select min(created_at) as at from events where state = 'pending'`);
    if (held?.at) closedBefore = Math.min(closedBefore, Math.floor(new Date(held.at).getTime() / HOUR_MS) * HOUR_MS);
    let start = mark.until;
    if (start === undefined) {
      // Once: where the history begins (a scan of the events; every later run reads the mark).
      const [oldest] = await query<{ at: string | Date | null }>(tx, sql`select min(created_at) as at from events`);
      start = oldest?.at ? Math.floor(new Date(oldest.at).getTime() / HOUR_MS) * HOUR_MS : closedBefore;
      start = Math.min(start, closedBefore);
    }
    const end = Math.min(start + HOURS_PER_RUN * HOUR_MS, closedBefore);
    if (end > start) await recountUsage(tx, new Date(start), new Date(end));
    const from = mark.from ?? start;
    await query(tx, sql`update settings set value = ${JSON.stringify({ from, until: Math.max(end, start) })}::jsonb where key = ${MARK}`);
    return Math.max(0, (end - start) / HOUR_MS);
  });
}
