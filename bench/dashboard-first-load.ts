/**
 * The console dashboard's first load (30 days of daily totals, nothing cached in the process),
 * read from the events and charges versus from the worker's hourly roll-up, alternately, on a
 * database seeded by bench/seed-console.ts.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:55500/bench npx tsx bench/dashboard-first-load.ts
 */
import { openPostgres, query, sql } from '../lib/db/client';
import { clearDashboardCache, dailyTotals } from '../lib/console/dashboard';
import { rolledHours, rollUpHours } from '../lib/db/hourly-totals';

const url = process.env.DATABASE_URL;
if (!url) throw new Error('Set DATABASE_URL to the seeded bench database.');
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const database = await openPostgres(url, { max: 4 });
const db = database.db;
const [{ id: companyId }] = await query<{ id: string }>(db, sql`select id from companies where name = 'Bench Company' order by id desc limit 1`);
const [{ n: events }] = await query<{ n: string }>(db, sql`select count(*) as n from events`);
const now = new Date();

const ms = async (f: () => Promise<unknown>) => {
  const t = performance.now();
  await f();
  return performance.now() - t;
};

// The worker's backlog: every closed hour of the last 31 days, a week per transaction.
await db.execute(sql`delete from hourly_totals`);
await db.execute(sql`delete from settings where key = 'hourly_totals'`);
let hours = 0;
const rollUp = await ms(async () => {
  hours = await rollUpHours(db, now);
});
const mark = await rolledHours(db);
const [{ n: rows }] = await query<{ n: string }>(db, sql`select count(*) as n from hourly_totals where company_id = ${companyId}`);
console.log(`${events} events; roll-up of the backlog: ${hours} hours, ${(rollUp / 1000).toFixed(1)} s; ${rows} rows for the company`);
// One more closed hour, as the worker adds every hour.
await db.execute(sql`update settings set value = ${JSON.stringify({ ...mark, until: mark!.until - 3600_000 })}::jsonb where key = 'hourly_totals'`);
console.log(`roll-up of one more hour: ${(await ms(() => rollUpHours(db, now))).toFixed(1)} ms`);

const firstLoad = async () => {
  clearDashboardCache();
  return ms(() => dailyTotals({ db, companyId, now }));
};
const counted = JSON.stringify(await dailyTotals({ db, companyId, now: new Date(now) }));
for (let round = 1; round <= ROUNDS; round++) {
  await db.execute(sql`delete from settings where key = 'hourly_totals'`);
  const scan = await firstLoad();
  await db.execute(sql`insert into settings (key, value) values ('hourly_totals', ${JSON.stringify(mark)}::jsonb)`);
  const rolled = await firstLoad();
  clearDashboardCache();
  if (JSON.stringify(await dailyTotals({ db, companyId, now })) !== counted) throw new Error('the roll-up and the events disagree');
  const later = await ms(() => dailyTotals({ db, companyId, now }));
  console.log(`round ${round}: first load from the events ${scan.toFixed(1)} ms, from the roll-up ${rolled.toFixed(1)} ms; a later load (closed hours cached) ${later.toFixed(1)} ms`);
}
const from = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - 29 * 86_400_000);
const plan = await query<Record<string, string>>(
  db,
  sql`explain (analyze, buffers) select hour, kind, state, denomination, count, total::text as total from hourly_totals
    where company_id = ${companyId} and hour >= ${from.toISOString()}::timestamptz and hour < ${new Date(mark!.until).toISOString()}::timestamptz`,
);
console.log(plan.map((r) => Object.values(r)[0]).join('\n'));
await database.close();
