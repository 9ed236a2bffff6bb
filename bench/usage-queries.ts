/**
 * The usage API's reads on a big account and company: 30 days by day and type (from the hourly
 * roll-up), the same grouped by a declared property (`model`, from its roll-up) and by an
 * undeclared one (`region`, from the events), and the customer portal's first load (the page's
 * reads, usage chart included). Seeds its own company: one account with EVENTS
 * completed events (default 1,000,000) over 90 days, with a `model` property and quantities, and
 * OTHERS more accounts sharing OTHER_EVENTS more events.
 *
 *   node scripts/pg.mjs start 55600     # prints the URL; create a database "usage" on it
 *   DATABASE_URL=postgres://postgres@127.0.0.1:55600/usage npx tsx bench/usage-queries.ts
 */
import { openPostgres, query, sql } from '../lib/db/client';
import { benchIdFunction } from './bench-id';
import { createCompany, updateCompany } from '../lib/billing/companies/companies';
import { readUsage } from '../lib/billing/usage/usage';
import { rolledUsage, rollUpUsage } from '../lib/db/usage-totals';
import { createPortalLink, viewPortal } from '../lib/billing/accounts/portal';
import { accountUsageByDay } from '../lib/console/usage';

const url = process.env.DATABASE_URL;
if (!url) throw new Error('Set DATABASE_URL to an empty database.');
const EVENTS = Number(process.env.EVENTS ?? 1_000_000);
const OTHER_EVENTS = Number(process.env.OTHER_EVENTS ?? 0);
const OTHERS = Number(process.env.OTHERS ?? 1000);
const RUNS = Number(process.env.RUNS ?? 50);
const DAYS = 90;
const n = (x: number) => sql.raw(String(Math.floor(x)));

const database = await openPostgres(url, { max: 4 });
const db = database.db;
const ms = async (f: () => Promise<unknown>) => {
  const t = performance.now();
  await f();
  return performance.now() - t;
};
const step = async (label: string, statement: ReturnType<typeof sql>) => console.log(`${label}: ${((await ms(() => db.execute(statement))) / 1000).toFixed(1)} s`);

// SEEDED=<company id>: measure a company seeded before (a run of this script), without seeding again;
// its usage_hourly rows and mark are rolled up anew (the roll-up's time is printed).
const seeded = process.env.SEEDED;
let company: { id: string };
let big: { id: string };
const nowMs = Date.now();
const span = DAYS * 86_400_000;
if (!seeded) {
  await step('id function', benchIdFunction);
  ({ company } = await createCompany({ db, input: { name: 'Usage Bench', email: `usage-${Date.now()}@example.com` } }));
  await step(
    `accounts (1 + ${OTHERS})`,
    sql`insert into accounts (id, company_id, name, email, metadata, flags, created_at)
      select bench_id('a', ${n(nowMs - span)} + g), ${company.id}, 'Account ' || g, 'a' || g || '@example.com', '{}'::jsonb, '[]'::jsonb, to_timestamp((${n(nowMs - span)} + g) / 1000.0) from generate_series(0, ${n(OTHERS)}) g`,
  );
  [big] = await query<{ id: string }>(db, sql`select id from accounts where company_id = ${company.id} and name = 'Account 0'`);
  const insertEvents = (count: number, accountSql: ReturnType<typeof sql>) =>
    sql`insert into events (id, company_id, account_id, type, state, cost_amount, cost_denomination, priced_by, metadata, quantities, properties, created_at)
      select bench_id('ev', s.ms), ${company.id}, ${accountSql}, (array['chat', 'render', 'embed', 'upload'])[1 + (s.g % 4)], 'complete',
        round((s.r * 10)::numeric, 3), 'credits', 'plan', '{}'::jsonb,
        jsonb_build_object('input_tokens', (s.g % 1000)::text, 'output_tokens', (s.g % 300)::text),
        jsonb_build_object('model', (array['small', 'medium', 'large'])[1 + (s.g % 3)], 'region', (array['eu', 'us'])[1 + (s.g % 2)]),
        to_timestamp(s.ms / 1000.0)
      from (select g, random() as r, ${n(nowMs)}::bigint - (random() * ${n(span)})::bigint as ms from generate_series(1, ${n(count)}) g) s`;
  for (let done = 0; done < EVENTS; done += 1_000_000) await step(`events of the big account (${done + Math.min(1_000_000, EVENTS - done)})`, insertEvents(Math.min(1_000_000, EVENTS - done), sql`${big.id}`));
  // The other accounts' ids in an array, indexed by the row number (a lookup per row would scan the accounts).
  const others = sql`(select array_agg(id order by id) from accounts where company_id = ${company.id} and id <> ${big.id})[1 + (s.g % ${n(OTHERS)})]`;
  for (let done = 0; done < OTHER_EVENTS; done += 1_000_000) {
    await step(`events of the other accounts (${done + Math.min(1_000_000, OTHER_EVENTS - done)})`, insertEvents(Math.min(1_000_000, OTHER_EVENTS - done), others));
  }
  await step('analyze', sql`analyze`);
} else {
  company = { id: seeded };
  [big] = await query<{ id: string }>(db, sql`select id from accounts where company_id = ${seeded} and name = 'Account 0'`);
  await query(db, sql`delete from usage_hourly`);
  await query(db, sql`delete from settings where key = 'usage_hourly'`);
}
console.log(`company ${company.id}, big account ${big.id}`);
// The company rolls its usage up by `model` (usage_properties); `region` stays undeclared: read from the events.
await updateCompany({ db, companyId: company.id, input: { usage_properties: [] } });
await updateCompany({ db, companyId: company.id, input: { usage_properties: ['model'] } });
const rollUp = await ms(() => rollUpUsage(db, new Date()));
const [{ rows }] = await query<{ rows: string }>(db, sql`select count(*) as rows from usage_hourly where company_id = ${company.id}`);
const [{ prows }] = await query<{ prows: string }>(db, sql`select count(*) as prows from usage_hourly_properties where company_id = ${company.id}`);
console.log(`roll-up of ${DAYS} days: ${(rollUp / 1000).toFixed(1)} s, ${rows} rows by type, ${prows} by model; rolled ${JSON.stringify(await rolledUsage(db))}`);

function summary(label: string, times: number[]) {
  const s = [...times].sort((a, b) => a - b);
  const at = (p: number) => s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)].toFixed(1);
  console.log(`| ${label} | ${s.length} | ${at(0.5)} ms | ${at(0.99)} ms | ${s[s.length - 1].toFixed(1)} ms |`);
}
const now = new Date();
const from = new Date(now.getTime() - 30 * 86_400_000);
const read = (accountId: string | null, groupBy: Parameters<typeof readUsage>[1]['groupBy']) =>
  readUsage(db, { companyId: company.id, accountId, denomination: null, from, to: null, granularity: 'day', groupBy, now: new Date() });
const timed = async (runs: number, f: () => Promise<unknown>) => {
  await f();
  const out: number[] = [];
  for (let i = 0; i < runs; i++) out.push(await ms(f));
  return out;
};
const link = await createPortalLink({ db, accountId: big.id, now: new Date() });
const token = new URL(link.url).pathname.split('/').pop()!;
console.log(`\n${EVENTS} events on the account, ${OTHER_EVENTS} on ${OTHERS} others; runs after one warm-up\n`);
console.log('| read | runs | p50 | p99 | max |\n|---|---|---|---|---|');
summary('account, 30 days by day and type', await timed(RUNS, () => read(big.id, { kind: 'type' })));
summary('company, 30 days by day and type', await timed(RUNS, () => read(null, { kind: 'type' })));
summary('account, 30 days by day and declared property model', await timed(RUNS, () => read(big.id, { kind: 'property', name: 'model' })));
summary('company, 30 days by day and declared property model', await timed(RUNS, () => read(null, { kind: 'property', name: 'model' })));
summary('account, 30 days by day and undeclared property region', await timed(Math.max(3, RUNS / 10), () => read(big.id, { kind: 'property', name: 'region' })));
summary('company, 30 days by day and undeclared property region', await timed(Math.max(3, RUNS / 10), () => read(null, { kind: 'property', name: 'region' })));
summary('portal first load (page reads + usage chart)', await timed(RUNS, async () => {
  const v = await viewPortal({ db, token });
  if ('view' in v) await accountUsageByDay({ db, companyId: company.id, accountId: big.id, now: new Date() });
}));
await database.close?.();
process.exit(0);
