import type { Db } from '../../db/client';
import { invalid } from '../../errors';
import { Decimal, unitsOut } from '../../money';
import { rolledProperty, rolledUsage } from '../../db/usage-totals';
import { usageFromEvents, usageFromRollUp, type Granularity, type UsageScope, type UsageSums } from '../../db/sql/usage';
import { getAccount } from '../accounts/accounts';

export type { Granularity };

const HOUR_MS = 3600_000;
const DAY_MS = 24 * HOUR_MS;
/** The longest window one call may read. */
export const MAX_WINDOW_DAYS = 400;
/** The window a call reads when it names none: the last 30 days. */
export const DEFAULT_WINDOW_DAYS = 30;
/**
 * Rows one answer may hold: a property with many distinct values over many buckets would
 * otherwise build an answer of any size. Past it the call is refused and says how to narrow it.
 */
export const MAX_ROWS = 50_000;

const ceilHour = (ms: number) => Math.ceil(ms / HOUR_MS) * HOUR_MS;
const floorHour = (ms: number) => Math.floor(ms / HOUR_MS) * HOUR_MS;

export type GroupBy = { kind: 'type' } | { kind: 'property'; name: string };

export type UsageRequest = {
  companyId: string;
  /** One account (checked to be the company's), or null for all of the company's accounts. */
  accountId: string | null;
  denomination: string | null;
  from: Date | null;
  to: Date | null;
  granularity: Granularity;
  groupBy: GroupBy;
  now: Date;
};

/** One bucket of one group in one cost denomination: exact sums of the completed events in it. */
export type UsageRow = {
  start: Date;
  group: string | null;
  /** The events' cost denomination; null for events without a cost. */
  denomination: string | null;
  events: number;
  /** Sum of the costs, an exact decimal string ('0' for events without a cost). */
  cost: string;
  /** Per quantity name, the exact sum. */
  quantities: Record<string, string>;
};

/** `group_by` as the API spells it: `type` or `property:<name>`. */
export function parseGroupBy(value: string | undefined): GroupBy {
  if (value === undefined || value === 'type') return { kind: 'type' };
  if (value.startsWith('property:')) {
    const name = value.slice('property:'.length);
    if (name.length >= 1 && name.length <= 100) return { kind: 'property', name };
    throw invalid('group_by property:<name> needs a property name of 1 to 100 characters.', 'group_by');
  }
  throw invalid(`group_by must be type or property:<name>; got ${JSON.stringify(value.slice(0, 100))}.`, 'group_by');
}

/**
 * The window a request reads: [from, to), at most MAX_WINDOW_DAYS long, from before to. `to` is by
 * default the end of the current hour (so what was recorded just now counts), `from` 30 days before `to`.
 */
export function usageWindow(req: Pick<UsageRequest, 'from' | 'to' | 'now'>): { from: Date; to: Date } {
  const to = req.to ?? new Date(floorHour(req.now.getTime()) + HOUR_MS);
  const from = req.from ?? new Date(to.getTime() - DEFAULT_WINDOW_DAYS * DAY_MS);
  if (from.getTime() >= to.getTime()) throw invalid(`from (${from.toISOString()}) must be before to (${to.toISOString()}).`, 'from');
  if (to.getTime() - from.getTime() > MAX_WINDOW_DAYS * DAY_MS) {
    throw invalid(`The window from ${from.toISOString()} to ${to.toISOString()} is longer than ${MAX_WINDOW_DAYS} days: ask for it in parts.`, 'to');
  }
  return { from, to };
}

/**
 * Usage of completed events, summed exactly per bucket (UTC hour, day or month), group (type, or
 * one property's value) and cost denomination, oldest bucket first; buckets without events are
 * left out. Grouped by type, or by a property the company declared (usage_properties), the hours
 * the worker has rolled up (closed, and the open ones provisionally up to a few minutes ago) are
 * read from usage_hourly or usage_hourly_properties (a few rows an hour) and only the rest (the
 * last minutes, the window's partial hours at either end, hours before the roll-up began or, for
 * a property declared later, before its history was filled) from the events; grouped by an undeclared property, from the events alone (slower: every event of
 * the window is read).
 */
export async function readUsage(db: Db, req: UsageRequest): Promise<{ from: Date; to: Date; rows: UsageRow[] }> {
  const { from, to } = usageWindow(req);
  if (req.accountId) await getAccount({ db, companyId: req.companyId, accountId: req.accountId });
  const scope: UsageScope = { companyId: req.companyId, accountId: req.accountId, denomination: req.denomination };
  const limit = MAX_ROWS + 1;
  const property = req.groupBy.kind === 'property' ? req.groupBy.name : null;
  const [a, b] = [from.getTime(), to.getTime()];
  const fromEvents = (x: number, y: number) => usageFromEvents(db, scope, { from: new Date(x), to: new Date(y), granularity: req.granularity, property, limit });
  const readMark = () => (property === null ? rolledUsage(db) : rolledProperty(db, req.companyId, property));
  let rows: UsageRow[] | null = null;
  // A run of the worker between reading the mark and the roll-up's rows rewrites the provisional
  // hours: the mark is read again after, and the read made again if it changed (then, as a last
  // resort, from the events alone).
  for (let attempt = 0; attempt < 3 && !rows; attempt++) {
    const rolled = await readMark();
    if (!rolled) break;
    // The roll-up covers [rolled.from, rolled.open): whole hours up to until, then hours counted
    // provisionally, the last one only up to open. Its rows of hours from rFrom on cover up to
    // rTo: to open when the window reaches it, else to the window's last whole hour.
    const rFrom = Math.max(ceilHour(a), rolled.from);
    const rTo = b >= rolled.open ? rolled.open : Math.min(floorHour(b), floorHour(rolled.open));
    if (rTo <= rFrom) break;
    const parts = [usageFromRollUp(db, scope, { from: new Date(rFrom), to: new Date(rTo), granularity: req.granularity, property, limit })];
    if (rFrom > a) parts.push(fromEvents(a, rFrom));
    if (b > rTo) parts.push(fromEvents(rTo, b));
    const read = await Promise.all(parts);
    if (JSON.stringify(await readMark()) === JSON.stringify(rolled)) rows = merge(read);
  }
  rows ??= merge([await fromEvents(a, b)]);
  if (rows.length > MAX_ROWS) {
    throw invalid(
      `This report would have more than ${MAX_ROWS} rows: ask for a shorter window, a coarser granularity, one account or one denomination${property === null ? '' : ', or group by a property with fewer values'}.`,
      property === null ? 'granularity' : 'group_by',
    );
  }
  return { from, to, rows };
}

/** Adds up the parts' rows of the same bucket, group and denomination, exactly. */
function merge(parts: UsageSums[][]): UsageRow[] {
  const out = new Map<string, { row: UsageRow; cost: Decimal; quantities: Map<string, Decimal> }>();
  for (const part of parts) {
    for (const r of part) {
      const key = JSON.stringify([r.start, r.grp, r.denomination]);
      let acc = out.get(key);
      if (!acc) {
        acc = { row: { start: new Date(r.start), group: r.grp, denomination: r.denomination === '' ? null : r.denomination, events: 0, cost: '0', quantities: {} }, cost: new Decimal(0), quantities: new Map() };
        out.set(key, acc);
      }
      acc.row.events += Number(r.events);
      if (r.cost !== null) acc.cost = acc.cost.plus(r.cost);
      const q = (typeof r.quantities === 'string' ? JSON.parse(r.quantities) : r.quantities) as Record<string, string> | null;
      for (const [name, total] of Object.entries(q ?? {})) acc.quantities.set(name, (acc.quantities.get(name) ?? new Decimal(0)).plus(total));
    }
  }
  const rows = [...out.values()].map(({ row, cost, quantities }) => ({
    ...row,
    cost: cost.toFixed(),
    quantities: Object.fromEntries([...quantities].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => [k, v.toFixed()])),
  }));
  return rows.sort((a, b) => a.start.getTime() - b.start.getTime() || cmpNullable(a.group, b.group) || cmpNullable(a.denomination, b.denomination));
}

function cmpNullable(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  return a < b ? -1 : 1;
}

export function serializeUsageRow(r: UsageRow) {
  return {
    start: r.start.toISOString(),
    group: r.group,
    denomination: r.denomination,
    events: r.events,
    cost: unitsOut(r.cost),
    quantities: Object.fromEntries(Object.entries(r.quantities).map(([k, v]) => [k, unitsOut(v)])),
  };
}
