/**
 * The usage API's reads on a big account and company: 30 days by day and type (from the hourly
 * roll-up), the same grouped by a declared property (`model`, from its roll-up) and by an
 * undeclared one (`region`, from the events), and the customer portal's first load (the page's
 * reads, usage chart included). Seeds its own company: one account with EVENTS
 * completed events (default 1,000,000) over 90 days, with a `model` property and quantities, and
 * OTHERS more accounts sharing OTHER_EVENTS more events, in time order. Rolls the usage up by type,
 * then declares `model` and fills its history; before the reads, writes the events up to the
 * clock and runs the provisional roll-up of the open hours as of RECENT_EVERY_MS ago.
 * SEEDED=<company id> measures a company seeded before; STAGE, ROLL_DAYS and UNDECLARED below.
 *
 *   node scripts/pg.mjs start 55600     # prints the URL; create a database "usage" on it
 *   DATABASE_URL=postgres://postgres@127.0.0.1:55600/usage npx tsx bench/usage-queries.ts
 */
import { openPostgres, query, sql } from '../lib/db/client';
import { benchIdFunction } from './bench-id';
import { createCompany, updateCompany } from '../lib/billing/companies/companies';
import { readUsage } from '../lib/billing/usage/usage';
import { RECENT_EVERY_MS, rolledUsage, rollUpRecentUsage, rollUpUsage } from '../lib/db/usage-totals';
import { createPortalLink, viewPortal } from '../lib/billing/accounts/portal';
import { accountUsageByDay } from '../lib/console/usage';

const url = process.env.DATABASE_URL;
if (!url) throw new Error('Set DATABASE_URL to an empty database.');
const EVENTS = Number(process.env.EVENTS ?? 1_000_000);
const OTHER_EVENTS = Number(process.env.OTHER_EVENTS ?? 0);
const OTHERS = Number(process.env.OTHERS ?? 1000);
const RUNS = Number(process.env.RUNS ?? 50);
const DAYS = 90;
// STAGE=seed stops after seeding, STAGE=rollup after the roll-ups; STAGE=reads (with SEEDED) keeps
// the roll-ups an earlier run made and only catches up and measures.
const STAGE = process.env.STAGE ?? 'all';
const n = (x: number) => sql.raw(String(Math.floor(x)));

const database = await openPostgres(url, { max: 4 });
const db = database.db;
const ms = async (f: () => Promise<unknown>) => {
  const t = performance.now();
  await f();
  return performance.now() - t;
};
const step = async (label: string, statement: ReturnType<typeof sql>) => console.log(`${label}: ${((await ms(() => db.execute(statement))) / 1000).toFixed(1)} s`);

/**
 * Completed events of [fromMs, toMs) in time order, as production writes them: a statement per
 * CHUNK_HOURS (default a day), the big account's `bigCount` and the other accounts' `otherCount`
 * spread evenly over the span, each chunk's rows sorted by time. `g` numbers the rows (the
 * type, quantities and properties cycle with it), from `g0`.
 */
async function seedEvents(fromMs: number, toMs: number, g0: number, bigCount: number, otherCount: number) {
  const chunk = Number(process.env.CHUNK_HOURS ?? 24) * 3_600_000;
  const started = performance.now();
  let [doneBig, doneOther] = [0, 0];
  // The other accounts' ids in an array, indexed by the row number (a lookup per row would scan the accounts).
  const others = sql`(select array_agg(id order by id) from accounts where company_id = ${company.id} and id <> ${big.id})`;
  for (let a = fromMs; a < toMs; a += chunk) {
    const b = Math.min(a + chunk, toMs);
    const share = (count: number) => Math.round((count * (b - fromMs)) / (toMs - fromMs));
    const [nBig, nOther] = [share(bigCount) - doneBig, share(otherCount) - doneOther];
    await db.execute(sql`insert into events (id, company_id, account_id, type, state, cost_amount, cost_denomination, priced_by, metadata, quantities, properties, created_at)
      select bench_id('ev', s.ms), ${company.id}, s.account, (array['chat', 'render', 'embed', 'upload'])[1 + (s.g % 4)], 'complete',
        round((random() * 10)::numeric, 3), 'credits', 'plan', '{}'::jsonb,
        jsonb_build_object('input_tokens', (s.g % 1000)::text, 'output_tokens', (s.g % 300)::text),
        jsonb_build_object('model', (array['small', 'medium', 'large'])[1 + (s.g % 3)], 'region', (array['eu', 'us'])[1 + (s.g % 2)]),
        to_timestamp(s.ms / 1000.0)
      from (
        select g, ${big.id}::text as account, ${n(a)}::bigint + floor(random() * ${n(b - a)})::bigint as ms
          from generate_series(${n(g0 + doneBig)}::bigint, ${n(g0 + doneBig + nBig - 1)}::bigint) g
        union all
        select g, (${others})[1 + (g % ${n(Math.max(1, OTHERS))})], ${n(a)}::bigint + floor(random() * ${n(b - a)})::bigint
          from generate_series(${n(g0 + doneOther)}::bigint, ${n(g0 + doneOther + nOther - 1)}::bigint) g
      ) s
      order by s.ms`);
    doneBig += nBig;
    doneOther += nOther;
    const total = doneBig + doneOther;
    if (Math.floor(total / 1_000_000) > Math.floor((total - nBig - nOther) / 1_000_000) || b === toMs) {
      console.log(`events: ${total} of ${bigCount + otherCount} up to ${new Date(b).toISOString()}, ${((performance.now() - started) / 1000).toFixed(1)} s`);
    }
  }
}

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
  // The other accounts' ids in an array, indexed by the row number (a lookup per row would scan the accounts).
  await seedEvents(nowMs - span, nowMs, 0, EVENTS, OTHER_EVENTS);
  await step('analyze', sql`analyze`);
} else {
  company = { id: seeded };
  [big] = await query<{ id: string }>(db, sql`select id from accounts where company_id = ${seeded} and name = 'Account 0'`);
}
console.log(`company ${company.id}, big account ${big.id}`);
if (STAGE === 'seed') process.exit(0);
if (STAGE !== 'reads') {
  if (seeded) {
    await query(db, sql`delete from usage_hourly`);
    await query(db, sql`delete from usage_hourly_properties`);
    await query(db, sql`delete from usage_property_marks`);
    await query(db, sql`delete from settings where key = 'usage_hourly'`);
  }
  // Rolled up by type first; then the company declares `model` (usage_properties), whose history the
  // worker fills a week at a time; `region` stays undeclared: read from the events.
  await updateCompany({ db, companyId: company.id, input: { usage_properties: [] } });
  // ROLL_DAYS=31: the roll-up begins that many days back instead of at the oldest event (as if the
  // worker had started then), enough for the 30-day reads in less time; older hours read from the events.
  if (process.env.ROLL_DAYS) {
    const begin = Math.floor((Date.now() - Number(process.env.ROLL_DAYS) * 86_400_000) / 3_600_000) * 3_600_000;
    await query(db, sql`insert into settings (key, value) values ('usage_hourly', ${JSON.stringify({ from: begin, until: begin })}::jsonb) on conflict (key) do update set value = excluded.value`);
  }
  const rollUp = await ms(() => rollUpUsage(db, new Date()));
  const [{ rows }] = await query<{ rows: string }>(db, sql`select count(*) as rows from usage_hourly where company_id = ${company.id}`);
  console.log(`roll-up of ${process.env.ROLL_DAYS ?? DAYS} days by type: ${(rollUp / 1000).toFixed(1)} s, ${rows} rows; rolled ${JSON.stringify(await rolledUsage(db))}`);
  await updateCompany({ db, companyId: company.id, input: { usage_properties: ['model'] } });
  const fill = await ms(() => rollUpUsage(db, new Date()));
  const [{ prows }] = await query<{ prows: string }>(db, sql`select count(*) as prows from usage_hourly_properties where company_id = ${company.id}`);
  console.log(`history of model, declared after the roll-up began, filled: ${(fill / 1000).toFixed(1)} s, ${prows} rows`);
}
if (STAGE === 'rollup') process.exit(0);
// The events from the newest one to now, at the same rate, as production would have written them
// meanwhile; then the worker's runs: the hours closed since, and the open ones provisionally, as
// of RECENT_EVERY_MS ago (the oldest the provisional rows get before the next run), so the
// reads sum the most events from the open hours they can.
const [{ last }] = await query<{ last: string | Date }>(db, sql`select max(created_at) as last from events where company_id = ${company.id}`);
const lastMs = new Date(last).getTime() + 1;
const caughtUp = Date.now();
await seedEvents(lastMs, caughtUp, EVENTS + OTHER_EVENTS, (EVENTS * (caughtUp - lastMs)) / span, (OTHER_EVENTS * (caughtUp - lastMs)) / span);
console.log(`closed hours since: ${((await ms(() => rollUpUsage(db, new Date()))) / 1000).toFixed(1)} s`);
const recentAt = new Date(Date.now() - RECENT_EVERY_MS);
console.log(`open hours, provisionally: ${((await ms(() => rollUpRecentUsage(db, recentAt))) / 1000).toFixed(1)} s; rolled ${JSON.stringify(await rolledUsage(db))}`);

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
// UNDECLARED=0 leaves out the reads by an undeclared property (minutes at 10 million events).
if (process.env.UNDECLARED !== '0') {
  summary('account, 30 days by day and undeclared property region', await timed(Math.max(3, RUNS / 10), () => read(big.id, { kind: 'property', name: 'region' })));
  summary('company, 30 days by day and undeclared property region', await timed(Math.max(3, RUNS / 10), () => read(null, { kind: 'property', name: 'region' })));
}
summary('portal first load (page reads + usage chart)', await timed(RUNS, async () => {
  const v = await viewPortal({ db, token });
  if ('view' in v) await accountUsageByDay({ db, companyId: company.id, accountId: big.id, now: new Date() });
}));
// The same company read as before the provisional roll-up: the open hours from the events.
await query(db, sql`update settings set value = value - 'open' where key = 'usage_hourly'`);
summary('company, 30 days by day and type, open hours from the events (no provisional rows)', await timed(RUNS, () => read(null, { kind: 'type' })));
summary('account, 30 days by day and type, open hours from the events (no provisional rows)', await timed(RUNS, () => read(big.id, { kind: 'type' })));
await database.close?.();
process.exit(0);
