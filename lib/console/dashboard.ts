import { query, sql, type Db } from '../db/client';
import { isTestClock } from '../clock';
import { amountFor, Decimal } from '../money';
import { idAt, idRange, type IdPrefix } from '../ids';
import { readHourlyTotals, rolledHours, SETTLE_MS } from '../db/hourly-totals';

const DAY_MS = 86_400_000;
/** Counts are exact up to this many rows; past it they are estimates (see accountTotals). */
export const EXACT_LIMIT = 10_000;

export type DayTotals = {
  day: string; // YYYY-MM-DD, UTC (YYYY-MM-DDTHH for an hour)
  /** Sum of the costs of completed (charged) events, per denomination, as exact decimals. */
  usage: Record<string, string>;
  events: number;
  rejected: number;
  chargedCents: number;
  charges: number;
  failedCharges: number;
};

/** The id window of a created_at window (see idRange). */
function idHint(column: ReturnType<typeof sql.raw>, prefix: IdPrefix, from: Date, to: Date) {
  const { gte, lt } = idRange(prefix, from, to);
  return gte && lt ? sql` and ${column} >= ${gte} and ${column} < ${lt}` : sql``;
}

export function utcDay(d: Date): string {
  return d.toISOString().slice(0, 10);
}

function startOfUtcDay(d: Date): Date {
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));
}

function emptyDay(day: string): DayTotals {
  return { day, usage: {}, events: 0, rejected: 0, chargedCents: 0, charges: 0, failedCharges: 0 };
}

/**
 * Per-hour totals of [from, to) (keyed YYYY-MM-DDTHH, UTC): events by state and denomination
 * through events_company_created (company_id, created_at), charges through the primary key's
 * time-ordered id range.
 */
export async function aggregateHours(db: Db, companyId: string, from: Date, to: Date): Promise<Map<string, DayTotals>> {
  const [eventRows, chargeRows] = await Promise.all([
    query<EventHours>(
      db,
      sql`select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24') as day, state, cost_denomination as denomination,
          count(*) as n, sum(cost_amount)::text as total
        from events
        where company_id = ${companyId} and created_at >= ${from.toISOString()}::timestamptz and created_at < ${to.toISOString()}::timestamptz
        group by 1, 2, 3`,
    ),
    query<ChargeHours>(
      db,
      sql`select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24') as day, status, count(*) as n, sum(amount) as cents
        from charges
        where company_id = ${companyId} and created_at >= ${from.toISOString()}::timestamptz and created_at < ${to.toISOString()}::timestamptz
          ${idHint(sql.raw('id'), 'ch', from, to)}
        group by 1, 2`,
    ),
  ]);
  return foldHours(eventRows, chargeRows);
}

type EventHours = { day: string; state: string; denomination: string | null; n: string | number; total: string | null };
type ChargeHours = { day: string; status: string; n: string | number; cents: string | number | null };

function foldHours(eventRows: EventHours[], chargeRows: ChargeHours[]): Map<string, DayTotals> {
  const out = new Map<string, DayTotals>();
  const get = (day: string) => {
    let d = out.get(day);
    if (!d) out.set(day, (d = emptyDay(day)));
    return d;
  };
  for (const r of eventRows) {
    const d = get(r.day);
    const n = Number(r.n);
    d.events += n;
    if (r.state === 'rejected') d.rejected += n;
    if (r.state === 'complete' && r.denomination && r.total !== null) {
      d.usage[r.denomination] = new Decimal(amountFor(d.usage, r.denomination) ?? 0).plus(r.total).toFixed();
    }
  }
  for (const r of chargeRows) {
    const d = get(r.day);
    const n = Number(r.n);
    d.charges += n;
    if (r.status === 'succeeded') d.chargedCents += Number(r.cents ?? 0);
    if (r.status === 'failed') d.failedCharges += n;
  }
  return out;
}

/** The same per-hour totals from the worker's roll-up (hourly_totals) of [from, to). */
async function rolledUpHours(db: Db, companyId: string, from: Date, to: Date): Promise<Map<string, DayTotals>> {
  const out = new Map<string, DayTotals>();
  for (const r of await readHourlyTotals(db, companyId, from, to)) {
    const usage = (typeof r.usage === 'string' ? JSON.parse(r.usage) : r.usage) ?? {};
    out.set(r.hour, {
      day: r.hour,
      usage: Object.fromEntries(Object.entries(usage as Record<string, string>).map(([k, v]) => [k, new Decimal(v).toFixed()])),
      events: Number(r.events),
      rejected: Number(r.rejected),
      chargedCents: Number(r.cents ?? 0),
      charges: Number(r.charges),
      failedCharges: Number(r.failed),
    });
  }
  return out;
}

/**
 * Totals of the closed hours [from, to): from the worker's roll-up where it reaches, counted from
 * the events and charges before and after it (a roll-up that has not caught up yet, or that
 * started within the window).
 */
async function closedHours(db: Db, companyId: string, from: number, to: number): Promise<Map<string, DayTotals>> {
  const rolled = await rolledHours(db);
  const rFrom = rolled ? Math.min(Math.max(from, rolled.from), to) : to;
  const rTo = rolled ? Math.max(Math.min(to, rolled.until), rFrom) : to;
  const parts = await Promise.all([
    rFrom > from ? aggregateHours(db, companyId, new Date(from), new Date(rFrom)) : new Map<string, DayTotals>(),
    rTo > rFrom ? rolledUpHours(db, companyId, new Date(rFrom), new Date(rTo)) : new Map<string, DayTotals>(),
    to > rTo ? aggregateHours(db, companyId, new Date(rTo), new Date(to)) : new Map<string, DayTotals>(),
  ]);
  return new Map(parts.flatMap((m) => [...m]));
}

type Cache = Map<string, Map<string, DayTotals>>;
const cache: Cache = ((globalThis as { __consoleHourCache?: Cache }).__consoleHourCache ??= new Map());
const MAX_COMPANIES = 200;
const HOUR_MS = 3600_000;

/** Drops the cached closed hours (tests; or after rewriting history by hand). */
export function clearDashboardCache(): void {
  cache.clear();
}

function hourKey(ms: number): string {
  return new Date(ms).toISOString().slice(0, 13); // YYYY-MM-DDTHH
}

/**
 * The last `days` days (today included), oldest first. Totals are read per hour: an hour that
 * ended more than SETTLE_MS ago never changes again, so it is read once per process and kept in
 * memory; only the hours since then (about three) are read on every load, so a page load scans
 * a few hours of a company's events, whatever their number. The first load of a process reads
 * the closed hours from the worker's roll-up (hourly_totals), a few thousand rows.
 */
export async function dailyTotals({ db, companyId, now, days = 30 }: { db: Db; companyId: string; now: Date; days?: number }): Promise<DayTotals[]> {
  const today = startOfUtcDay(now);
  const first = today.getTime() - (days - 1) * DAY_MS;
  const end = today.getTime() + DAY_MS;
  const closedBefore = Math.floor((now.getTime() - SETTLE_MS) / HOUR_MS) * HOUR_MS; // hours starting before this are closed
  const closedEnd = Math.max(first, Math.min(closedBefore, end));

  let known = cache.get(companyId);
  if (!known) {
    if (cache.size >= MAX_COMPANIES) cache.delete(cache.keys().next().value!);
    cache.set(companyId, (known = new Map()));
  }
  let missingFrom: number | null = null;
  let missingTo = first;
  for (let h = first; h < closedEnd; h += HOUR_MS) {
    if (!known.has(hourKey(h))) {
      missingFrom ??= h;
      missingTo = h + HOUR_MS;
    }
  }
  const reads: Promise<void>[] = [];
  if (missingFrom !== null) {
    const from = missingFrom;
    reads.push(
      closedHours(db, companyId, from, missingTo).then((found) => {
        for (let h = from; h < missingTo; h += HOUR_MS) known.set(hourKey(h), found.get(hourKey(h)) ?? emptyDay(hourKey(h)));
      }),
    );
  }
  let open = new Map<string, DayTotals>();
  if (closedEnd < end) {
    reads.push(
      aggregateHours(db, companyId, new Date(closedEnd), new Date(end)).then((found) => {
        open = found;
      }),
    );
  }
  await Promise.all(reads);
  for (const k of [...known.keys()]) if (k < hourKey(first)) known.delete(k);

  const out = new Map<string, DayTotals>();
  for (let d = first; d < end; d += DAY_MS) out.set(utcDay(new Date(d)), emptyDay(utcDay(new Date(d))));
  const fold = (hour: DayTotals) => {
    const d = out.get(hour.day.slice(0, 10));
    if (!d) return;
    d.events += hour.events;
    d.rejected += hour.rejected;
    d.chargedCents += hour.chargedCents;
    d.charges += hour.charges;
    d.failedCharges += hour.failedCharges;
    for (const [k, v] of Object.entries(hour.usage)) d.usage[k] = new Decimal(amountFor(d.usage, k) ?? 0).plus(v).toFixed();
  };
  for (let h = first; h < closedEnd; h += HOUR_MS) fold(known.get(hourKey(h))!);
  for (const hour of open.values()) fold(hour);
  return [...out.values()];
}

export type Count = { value: number; estimated: boolean; atLeast: boolean };

/** The planner's row estimate for a query (from the table's statistics), without running it. */
async function estimateRows(db: Db, statement: ReturnType<typeof sql>): Promise<number> {
  const rows = await query<Record<string, unknown>>(db, sql`explain (format json) ${statement}`);
  const raw = Object.values(rows[0] ?? {})[0];
  const plan = (typeof raw === 'string' ? JSON.parse(raw) : raw) as { Plan: { 'Plan Rows': number } }[];
  return Math.round(plan[0]?.Plan['Plan Rows'] ?? 0);
}

/**
 * Accounts of a company. Counting reads at most EXACT_LIMIT + 1 index entries; a bigger company
 * gets the planner's estimate for `company_id = $1` (from the column's statistics, refreshed by
 * autovacuum's ANALYZE), never a full COUNT(*) over the table.
 */
export async function accountTotals({ db, companyId, now }: { db: Db; companyId: string; now: Date }): Promise<{ total: Count; recent: Count }> {
  const from = new Date(now.getTime() - 30 * DAY_MS);
  const [[all], [recent]] = await Promise.all([
    query<{ n: string | number }>(db, sql`select count(*) as n from (select 1 from accounts where company_id = ${companyId} limit ${EXACT_LIMIT + 1}) t`),
    query<{ n: string | number }>(
      db,
      sql`select count(*) as n from (select 1 from accounts where company_id = ${companyId}
        ${isTestClock() ? sql`and created_at >= ${from.toISOString()}::timestamptz` : sql`and id >= ${idAt('a', from.getTime())}`}
        limit ${EXACT_LIMIT + 1}) t`,
    ),
  ]);
  let total: Count = { value: Number(all.n), estimated: false, atLeast: false };
  if (total.value > EXACT_LIMIT) {
    const estimate = await estimateRows(db, sql`select 1 from accounts where company_id = ${companyId}`);
    total = estimate > EXACT_LIMIT ? { value: estimate, estimated: true, atLeast: false } : { value: EXACT_LIMIT, estimated: false, atLeast: true };
  }
  const recentCount = Number(recent.n);
  return { total, recent: { value: Math.min(recentCount, EXACT_LIMIT), estimated: false, atLeast: recentCount > EXACT_LIMIT } };
}
