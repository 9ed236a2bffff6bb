import type { Db } from '../db/client';
import { readUsage, type UsageRow } from '../billing/usage/usage';
import { formatUnits } from './format';
import { csvRow } from './exports';

const DAY_MS = 86_400_000;
/** The portal's and the console's chart: this many UTC days, today included. */
export const USAGE_CHART_DAYS = 30;

export type UsageDay = { day: string; counts: Record<string, number>; rows: { type: string; events: string; cost: string }[] };

/** The last 30 UTC days (today included, up to the end of the current hour) of one account's completed events, by day and type. */
export async function accountUsageByDay({ db, companyId, accountId, now }: { db: Db; companyId: string; accountId: string; now: Date }): Promise<{ rows: UsageRow[]; days: UsageDay[]; types: string[] }> {
  const today = Math.floor(now.getTime() / DAY_MS) * DAY_MS;
  const from = new Date(today - (USAGE_CHART_DAYS - 1) * DAY_MS);
  const { rows } = await readUsage(db, { companyId, accountId, denomination: null, from, to: null, granularity: 'day', groupBy: { kind: 'type' }, now });
  const byDay = new Map<string, UsageDay>();
  for (let i = 0; i < USAGE_CHART_DAYS; i++) {
    const day = new Date(from.getTime() + i * DAY_MS).toISOString().slice(0, 10);
    byDay.set(day, { day, counts: {}, rows: [] });
  }
  const types = new Set<string>();
  for (const r of rows) {
    const d = byDay.get(r.start.toISOString().slice(0, 10));
    if (!d) continue;
    const type = r.group ?? '';
    types.add(type);
    d.counts[type] = (d.counts[type] ?? 0) + r.events;
    d.rows.push({ type, events: formatUnits(r.events), cost: r.denomination ? `${formatUnits(r.cost)} ${r.denomination}` : '—' });
  }
  return { rows, days: [...byDay.values()], types: [...types].sort() };
}

export const USAGE_COLUMNS = ['day', 'type', 'denomination', 'events', 'cost', 'quantities'];

/** The same rows as CSV: one line per day, type and cost denomination, exact sums. */
export function usageCsv(rows: UsageRow[]): string {
  let out = csvRow(USAGE_COLUMNS);
  for (const r of rows) {
    out += csvRow([r.start.toISOString().slice(0, 10), { text: r.group }, r.denomination ?? '', r.events, r.cost, Object.keys(r.quantities).length ? { text: JSON.stringify(r.quantities) } : '']);
  }
  return out;
}
