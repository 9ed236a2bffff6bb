import { query, sql, type Db } from './client';
import { idRange, type IdPrefix } from '../ids';
import { HOUR_MS, nextRollUpOf, readMark, rollUp, SETTLE_MS, type RolledRange, type RollUp } from './roll-up';

/** The dashboard shows 30 days: the first roll-up starts a day before that, older hours are never read. */
const HISTORY_MS = 31 * 24 * HOUR_MS;
const MARK = 'hourly_totals';

export { SETTLE_MS };

/** The closed hours hourly_totals holds for every company: [from, until), hour-aligned epoch ms. */
export type RolledHours = RolledRange;

export async function rolledHours(db: Db): Promise<RolledHours | null> {
  const mark = await readMark(db, MARK);
  return mark && { from: mark.from, until: mark.until };
}

function idHint(prefix: IdPrefix, from: Date, to: Date) {
  const { gte, lt } = idRange(prefix, from, to);
  return gte && lt ? sql` and id >= ${gte} and id < ${lt}` : sql``;
}

/**
 * Counts [from, to) again from the events and charges of every company, replacing what the
 * table held for those hours: running it twice leaves the same rows.
 */
export async function recountHours(db: Db, from: Date, to: Date): Promise<void> {
  const f = from.toISOString();
  const t = to.toISOString();
  const hour = (column: string) => sql.raw(`date_trunc('hour', ${column} at time zone 'UTC') at time zone 'UTC'`);
  await query(db, sql`delete from hourly_totals where hour >= ${f}::timestamptz and hour < ${t}::timestamptz`);
  await query(
    db,
    sql`insert into hourly_totals (company_id, hour, kind, state, denomination, count, total)
      select company_id, ${hour('created_at')}, 'event', state, coalesce(cost_denomination, ''), count(*), sum(cost_amount)
        from events where created_at >= ${f}::timestamptz and created_at < ${t}::timestamptz ${idHint('ev', from, to)}
        group by 1, 2, 4, 5
      union all
      select company_id, ${hour('created_at')}, 'charge', status, '', count(*), sum(amount)
        from charges where created_at >= ${f}::timestamptz and created_at < ${t}::timestamptz ${idHint('ch', from, to)}
        group by 1, 2, 4`,
  );
}

const spec: RollUp = {
  mark: MARK,
  start: async (_tx, mark, closed) => Math.max(mark.until ?? 0, closed - HISTORY_MS),
  recount: recountHours,
};

/**
 * The worker's task: adds the hours closed since the last run (lib/db/roll-up.ts: an hour with a
 * hold still pending waits for it to end), a week at most in each transaction. Returns the number
 * of hours added.
 */
export async function rollUpHours(db: Db, now: Date, opts: { stopping?: () => boolean } = {}): Promise<number> {
  return rollUp(db, spec, now, opts);
}

/** When the next hour closes that the table does not hold yet (null before the first roll-up). */
export async function nextRollUp(db: Db, _after: Date): Promise<Date | null> {
  return nextRollUpOf(db, MARK);
}

/**
 * A company's totals per hour of [from, to) (hour-aligned, inside rolledHours), one row an hour
 * (YYYY-MM-DDTHH, UTC): all events, rejected ones, charges, succeeded cents, failed charges, and
 * the cost of complete events per denomination as exact decimal strings.
 */
export type HourTotals = { hour: string; events: number | string; rejected: number | string; charges: number | string; cents: string | null; failed: number | string; usage: Record<string, string> | string | null };

export async function readHourlyTotals(db: Db, companyId: string, from: Date, to: Date): Promise<HourTotals[]> {
  return query<HourTotals>(
    db,
    sql`select to_char(hour at time zone 'UTC', 'YYYY-MM-DD"T"HH24') as hour,
        coalesce(sum(count) filter (where kind = 'event'), 0) as events,
        coalesce(sum(count) filter (where kind = 'event' and state = 'rejected'), 0) as rejected,
        coalesce(sum(count) filter (where kind = 'charge'), 0) as charges,
        (sum(total) filter (where kind = 'charge' and state = 'succeeded'))::text as cents,
        coalesce(sum(count) filter (where kind = 'charge' and state = 'failed'), 0) as failed,
        jsonb_object_agg(denomination, total::text) filter (where kind = 'event' and state = 'complete' and denomination <> '' and total is not null) as usage
      from hourly_totals
      where company_id = ${companyId} and hour >= ${from.toISOString()}::timestamptz and hour < ${to.toISOString()}::timestamptz
      group by hour`,
  );
}
