import { query, sql, type Db } from './client';
import { idRange } from '../ids';
import { closedBefore, COMMIT_LAG_MS, HOUR_MS, HOURS_PER_RUN, lockMark, nextRollUpOf, openOf, readMark, rollUp, writeMark, type Mark, type RollUp } from './roll-up';

const MARK = 'usage_hourly';

/** How often the worker rolls up the open hours provisionally (rollUpRecentUsage). */
export const RECENT_EVERY_MS = 5 * 60_000;

/**
 * What usage_hourly and usage_hourly_properties hold for every company and account, epoch ms:
 * the closed hours [from, until), hour-aligned, counted once and for all; and, provisionally,
 * [until, open) (open is until when there is nothing provisional), counted again by every
 * provisional run and by the hour's final count. `rev` changes with every write.
 */
export type RolledUsage = Mark;

export async function rolledUsage(db: Db): Promise<RolledUsage | null> {
  return readMark(db, MARK);
}

function idHint(from: Date, to: Date) {
  const { gte, lt } = idRange('ev', from, to);
  return gte && lt ? sql` and e.id >= ${gte} and e.id < ${lt}` : sql``;
}

/**
 * Inserts into `table` the sums of `source` (rows of company_id, account_id, hour, the `keys`,
 * denomination, cost_amount, quantities): per account, hour, keys and denomination, and the same
 * over all of a company's accounts under account_id ''. Keys may be null.
 */
function insertSums(table: 'usage_hourly' | 'usage_hourly_properties', keys: string[], source: ReturnType<typeof sql>) {
  const k = keys.join(', ');
  const by = (alias: string) => keys.map((key) => `${alias}.${key}`).join(', ');
  const same = (a: string, b: string, withAccount: boolean) =>
    [`${a}.company_id = ${b}.company_id`, ...(withAccount ? [`${a}.account_id = ${b}.account_id`] : []), `${a}.hour = ${b}.hour`, `${a}.denomination = ${b}.denomination`, ...keys.map((key) => `${a}.${key} is not distinct from ${b}.${key}`)].join(' and ');
  return sql`with ev as materialized (${source}),
      counts as (
        select company_id, account_id, hour, ${sql.raw(k)}, denomination, count(*) as events, sum(cost_amount) as cost
          from ev group by company_id, account_id, hour, ${sql.raw(k)}, denomination
      ),
      sums as (
        select ev.company_id, ev.account_id, ev.hour, ${sql.raw(by('ev'))}, ev.denomination, q.key as qkey, sum(q.value::numeric) as total
          from ev cross join lateral jsonb_each_text(case when jsonb_typeof(ev.quantities) = 'object' then ev.quantities else '{}'::jsonb end) q
          group by ev.company_id, ev.account_id, ev.hour, ${sql.raw(by('ev'))}, ev.denomination, q.key
      ),
      account_quantities as (
        select company_id, account_id, hour, ${sql.raw(k)}, denomination, jsonb_object_agg(qkey, total::text) as quantities
          from sums group by company_id, account_id, hour, ${sql.raw(k)}, denomination
      ),
      company_quantities as (
        select company_id, hour, ${sql.raw(k)}, denomination, jsonb_object_agg(qkey, total::text) as quantities
          from (select company_id, hour, ${sql.raw(k)}, denomination, qkey, sum(total) as total from sums group by company_id, hour, ${sql.raw(k)}, denomination, qkey) s
          group by company_id, hour, ${sql.raw(k)}, denomination
      ),
      per_company as (
        select company_id, hour, ${sql.raw(k)}, denomination, sum(events)::bigint as events, sum(cost) as cost
          from counts group by company_id, hour, ${sql.raw(k)}, denomination
      )
      insert into ${sql.raw(table)} (company_id, account_id, hour, ${sql.raw(k)}, denomination, events, cost, quantities)
      select c.company_id, c.account_id, c.hour, ${sql.raw(by('c'))}, c.denomination, c.events, c.cost, q.quantities
        from counts c left join account_quantities q on ${sql.raw(same('q', 'c', true))}
      union all
      select p.company_id, '', p.hour, ${sql.raw(by('p'))}, p.denomination, p.events, p.cost, q.quantities
        from per_company p left join company_quantities q on ${sql.raw(same('q', 'p', false))}`;
}

/** The completed events of [from, to) as the roll-ups read them. */
const completed = (from: Date, to: Date) =>
  sql`e.state = 'complete' and e.created_at >= ${from.toISOString()}::timestamptz and e.created_at < ${to.toISOString()}::timestamptz ${idHint(from, to)}`;

/**
 * Counts [from, to) again from the completed events, replacing what usage_hourly held for those
 * hours: per account, hour, type and cost denomination, and the same over all of a company's
 * accounts (account_id ''); and in usage_hourly_properties the same per value of each property
 * the companies declare. Running it twice leaves the same rows.
 */
export async function recountUsage(db: Db, from: Date, to: Date): Promise<void> {
  const f = from.toISOString();
  const t = to.toISOString();
  await query(db, sql`delete from usage_hourly where hour >= ${f}::timestamptz and hour < ${t}::timestamptz`);
  await query(
    db,
    insertSums(
      'usage_hourly',
      ['type'],
      sql`select e.company_id, e.account_id, date_trunc('hour', e.created_at, 'UTC') as hour, e.type, coalesce(e.cost_denomination, '') as denomination, e.cost_amount, e.quantities
        from events e where ${completed(from, to)}`,
    ),
  );
  await recountProperties(db, from, to, null);
}

/**
 * The property rows of [from, to): of every company's declared properties, or of one company's
 * one property (filling the history of a property declared later).
 */
async function recountProperties(db: Db, from: Date, to: Date, only: { companyId: string; property: string } | null): Promise<void> {
  const f = from.toISOString();
  const t = to.toISOString();
  const scope = only ? sql` and company_id = ${only.companyId} and property = ${only.property}` : sql``;
  await query(db, sql`delete from usage_hourly_properties where hour >= ${f}::timestamptz and hour < ${t}::timestamptz${scope}`);
  const declared = only
    ? sql`select ${only.companyId}::text as company_id, ${only.property}::text as property`
    : sql`select c.id as company_id, p.name as property from companies c cross join lateral jsonb_array_elements_text(c.usage_properties) p(name) where c.usage_properties <> '[]'::jsonb`;
  await query(
    db,
    insertSums(
      'usage_hourly_properties',
      ['property', 'value'],
      sql`select e.company_id, e.account_id, date_trunc('hour', e.created_at, 'UTC') as hour, d.property, e.properties ->> d.property as value,
          coalesce(e.cost_denomination, '') as denomination, e.cost_amount, e.quantities
        from (${declared}) d join events e on e.company_id = d.company_id
        where ${completed(from, to)}`,
    ),
  );
}

const spec: RollUp = {
  mark: MARK,
  start: async (tx, mark, closed) => {
    if (mark.until !== undefined) return mark.until;
    // Once: where the history begins (a scan of the events; every later run reads the mark).
    const [oldest] = await query<{ at: string | Date | null }>(tx, sql`select min(created_at) as at from events`);
    return Math.min(oldest?.at ? Math.floor(new Date(oldest.at).getTime() / HOUR_MS) * HOUR_MS : closed, closed);
  },
  recount: recountUsage,
};

/**
 * The worker's task: adds the hours closed since the last run (lib/db/roll-up.ts), a week at most
 * in each transaction; the first run starts at the oldest event's hour, so every report of closed
 * hours can be read from the table. Then fills, a week per transaction, the history of properties
 * declared after the roll-up began. Returns the number of hours added or filled.
 */
export async function rollUpUsage(db: Db, now: Date, opts: { stopping?: () => boolean } = {}): Promise<number> {
  let hours = await rollUp(db, spec, now, opts);
  while (!opts.stopping?.()) {
    const filled = await fillPropertyWeek(db);
    if (!filled) break;
    hours += filled;
  }
  return hours;
}

/**
 * The worker's provisional run (every RECENT_EVERY_MS): counts the hours after the closed ones
 * from the events again, up to COMMIT_LAG_MS before `now` (to the minute; lib/db/roll-up.ts), so
 * a read sums only the last minutes from the events. It stops short of the oldest hold still live
 * (or expired less than COMMIT_LAG_MS ago, its completion perhaps not yet committed): its event
 * may yet complete and count, so what follows it is read from the events until it ends. Each hour
 * is counted again for good once it closes (rollUpUsage). Nothing to do (0) before the first
 * roll-up of closed hours or while it has hours to catch up on; 1 when it counted.
 */
export async function rollUpRecentUsage(db: Db, now: Date): Promise<number> {
  const known = await rolledUsage(db);
  const target = Math.floor((now.getTime() - COMMIT_LAG_MS) / 60_000) * 60_000;
  if (!known || known.open === target) return 0;
  return db.transaction(async (tx) => {
    const mark = await lockMark(tx, MARK);
    if (mark.from === undefined || mark.until === undefined) return 0;
    // The oldest hold still live (or expired less than COMMIT_LAG_MS ago) stops the count too.
    const { before, held } = await closedBefore(tx, now);
    // Closed hours not yet rolled up (a worker stopped for a while): rollUpUsage catches up first.
    if (mark.until < before) return 0;
    const open = Math.max(mark.until, held === null ? target : Math.min(target, held));
    const was = openOf({ until: mark.until, open: mark.open });
    if (open === was) return 0;
    const until = new Date(mark.until).toISOString();
    await query(tx, sql`delete from usage_hourly where hour >= ${until}::timestamptz`);
    await query(tx, sql`delete from usage_hourly_properties where hour >= ${until}::timestamptz`);
    if (open > mark.until) await recountUsage(tx, new Date(mark.until), new Date(open));
    await writeMark(tx, MARK, { ...mark, open });
    return 1;
  });
}

/** When the next hour closes that the table does not hold yet (null before the first roll-up). */
export async function nextUsageRollUp(db: Db, _after: Date): Promise<Date | null> {
  return nextRollUpOf(db, MARK);
}

/** One week of one declared property's history, the newest missing week first; the hours filled (0: none missing). */
async function fillPropertyWeek(db: Db): Promise<number> {
  const rolled = await rolledUsage(db);
  if (!rolled) return 0;
  const [todo] = await query<{ company_id: string; property: string }>(
    db,
    sql`select company_id, property from usage_property_marks where from_hour > ${new Date(rolled.from).toISOString()}::timestamptz order by company_id, property limit 1`,
  );
  if (!todo) return 0;
  return db.transaction(async (tx) => {
    const mark = await lockMark(tx, MARK);
    const [row] = await query<{ from_hour: string | Date | null }>(
      tx,
      sql`select from_hour from usage_property_marks where company_id = ${todo.company_id} and property = ${todo.property} for update`,
    );
    if (!row?.from_hour || mark.from === undefined) return 0;
    const end = new Date(row.from_hour).getTime();
    const start = Math.max(mark.from, end - HOURS_PER_RUN * HOUR_MS);
    if (end <= start) return 0;
    await recountProperties(tx, new Date(start), new Date(end), { companyId: todo.company_id, property: todo.property });
    const next = start <= mark.from ? null : new Date(start).toISOString();
    await query(tx, sql`update usage_property_marks set from_hour = ${next}::timestamptz where company_id = ${todo.company_id} and property = ${todo.property}`);
    return (end - start) / HOUR_MS;
  });
}

/**
 * Sets the properties a company's usage is rolled up by (under the roll-up's lock, so no run
 * counts half of a change). A newly declared property is held from the hour the roll-up has
 * reached (or from its start, before its first run); the worker fills its older hours. An
 * undeclared one's rows are dropped.
 */
export async function declareUsageProperties(tx: Db, companyId: string, before: string[], after: string[]): Promise<void> {
  const added = after.filter((p) => !before.includes(p));
  const removed = before.filter((p) => !after.includes(p));
  if (!added.length && !removed.length) return;
  const mark = await lockMark(tx, MARK);
  // The provisional hours hold no rows of a property declared now: they are read from the
  // events again until the next provisional run counts them anew.
  if (mark.until !== undefined && openOf({ until: mark.until, open: mark.open }) > mark.until) await writeMark(tx, MARK, { ...mark, open: mark.until });
  for (const property of removed) {
    await query(tx, sql`delete from usage_hourly_properties where company_id = ${companyId} and property = ${property}`);
    await query(tx, sql`delete from usage_property_marks where company_id = ${companyId} and property = ${property}`);
  }
  const fromHour = mark.until === undefined ? null : new Date(mark.until).toISOString();
  for (const property of added) {
    await query(
      tx,
      sql`insert into usage_property_marks (company_id, property, from_hour) values (${companyId}, ${property}, ${fromHour}::timestamptz)
        on conflict (company_id, property) do update set from_hour = excluded.from_hour`,
    );
    await query(tx, sql`delete from usage_hourly_properties where company_id = ${companyId} and property = ${property}`);
  }
}

/**
 * The closed hours usage_hourly_properties holds for a company's property: null when the property
 * is not declared (or nothing is rolled up yet).
 */
export async function rolledProperty(db: Db, companyId: string, property: string): Promise<RolledUsage | null> {
  const [rolled, [mark]] = await Promise.all([
    rolledUsage(db),
    query<{ from_hour: string | Date | null }>(db, sql`select from_hour from usage_property_marks where company_id = ${companyId} and property = ${property}`),
  ]);
  if (!rolled || !mark) return null;
  const from = mark.from_hour === null ? rolled.from : Math.max(rolled.from, new Date(mark.from_hour).getTime());
  return { from, until: Math.max(from, rolled.until), open: Math.max(from, rolled.open), rev: rolled.rev };
}
