import { query, sql, type Db } from './client';
import { idRange, type IdPrefix } from '../ids';

const HOUR_MS = 3600_000;
/**
 * An hour's numbers stop changing once its last pending hold has expired (1 hour) and its
 * charges have settled: two hours after it ends it is closed.
 */
export const SETTLE_MS = 2 * HOUR_MS;
/** The dashboard shows 30 days: the first roll-up starts a day before that, older hours are never read. */
const HISTORY_MS = 31 * 24 * HOUR_MS;
/**
 * Hours per transaction: a backlog (a first start, a worker stopped for days) drains a week at a
 * time, about 0.8 million events per transaction at 10 million events in 90 days.
 */
const HOURS_PER_RUN = 7 * 24;
const MARK = 'hourly_totals';

/** The closed hours hourly_totals holds for every company: [from, until), hour-aligned epoch ms. */
export type RolledHours = { from: number; until: number };

export async function rolledHours(db: Db): Promise<RolledHours | null> {
  const [row] = await query<{ value: RolledHours | null }>(db, sql`select value from settings where key = ${MARK}`);
  return row?.value?.until ? row.value : null;
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

/**
 * The worker's task: adds the hours closed since the last run, a week at most in each
 * transaction with the mark that says how far the table reaches (the mark's row lock keeps two
 * workers from rolling up at once). Returns the number of hours added.
 */
export async function rollUpHours(db: Db, now: Date, opts: { stopping?: () => boolean } = {}): Promise<number> {
  let hours = 0;
  for (;;) {
    const added = await rollUpDay(db, now);
    hours += added;
    if (!added || opts.stopping?.()) return hours;
  }
}

/** When the next hour closes that the table does not hold yet (null before the first roll-up). */
export async function nextRollUp(db: Db, _after: Date): Promise<Date | null> {
  const known = await rolledHours(db);
  return known ? new Date(known.until + HOUR_MS + SETTLE_MS) : null;
}

async function rollUpDay(db: Db, now: Date): Promise<number> {
  const closedBefore = Math.floor((now.getTime() - SETTLE_MS) / HOUR_MS) * HOUR_MS;
  // Most runs find no newly closed hour: one read, no transaction.
  const known = await rolledHours(db);
  if (known && known.until >= closedBefore) return 0;
  return db.transaction(async (tx) => {
    await query(tx, sql`insert into settings (key, value) values (${MARK}, '{}'::jsonb) on conflict (key) do nothing`);
    const [row] = await query<{ value: Partial<RolledHours> }>(tx, sql`select value from settings where key = ${MARK} for update`);
    const mark = row.value;
    const start = Math.max(mark.until ?? 0, closedBefore - HISTORY_MS);
    const end = Math.min(start + HOURS_PER_RUN * HOUR_MS, closedBefore);
    if (end <= start) return 0;
    await recountHours(tx, new Date(start), new Date(end));
    // Hours skipped (a worker stopped for longer than the history) break the range: it starts again here.
    const from = mark.from !== undefined && mark.until === start ? mark.from : start;
    await query(tx, sql`update settings set value = ${JSON.stringify({ from, until: end })}::jsonb where key = ${MARK}`);
    return (end - start) / HOUR_MS;
  });
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
