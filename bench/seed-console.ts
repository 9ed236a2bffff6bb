/**
 * Seeds a PostgreSQL database for the console's performance check: one big company with
 * 100,000 accounts, millions of events spread over 90 days (ids time-ordered like real ones),
 * ledger rows, charges, webhook deliveries, and a small second company so every query has to
 * filter by company.
 *
 *   node scripts/pg.mjs start 55500
 *   DATABASE_URL=postgres://postgres@127.0.0.1:55500/postgres EVENTS=10000000 npx tsx bench/seed-console.ts
 *
 * Indexes on the bulk tables are dropped during the load and re-created after it (the same
 * definitions, read from pg_indexes), then the tables are vacuumed and analyzed.
 */
import { openPostgres, query, sql } from '../lib/db/client';
import { benchIdFunction } from './bench-id';
import { createCompany } from '../lib/billing/companies/companies';

const url = process.env.DATABASE_URL;
if (!url) throw new Error('Set DATABASE_URL to a throwaway PostgreSQL database.');
const ACCOUNTS = Number(process.env.ACCOUNTS ?? 100_000);
const EVENTS = Number(process.env.EVENTS ?? 10_000_000);
const DAYS = Number(process.env.DAYS ?? 90);
const CHUNK = 1_000_000;
/** A number spliced into the SQL text (parameters would be typed int4 and overflow). */
const n = (x: number) => sql.raw(String(Math.floor(x)));

const database = await openPostgres(url, { max: 2 });
const db = database.db;
const t0 = Date.now();
const step = async (label: string, statement: ReturnType<typeof sql>) => {
  const started = Date.now();
  await db.execute(statement);
  console.log(`${label}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
};

await step('id function', benchIdFunction);

const { company } = await createCompany({ db, input: { name: 'Bench Company', email: `bench-${Date.now()}@example.com`, password: 'bench-password' } });
const { company: other } = await createCompany({ db, input: { name: 'Other Company', email: `other-${Date.now()}@example.com` } });
console.log(`company ${company.id} (other ${other.id})`);

const bulk = ['accounts', 'balances', 'events', 'transactions', 'charges', 'webhook_deliveries', 'webhook_attempts'];
const defs = await query<{ indexname: string; indexdef: string }>(
  db,
  sql.raw(`select indexname, indexdef from pg_indexes where schemaname = 'public' and tablename in (${bulk.map((t) => `'${t}'`).join(', ')}) and indexname not like '%_pkey'`),
);
for (const d of defs) await db.execute(sql.raw(`drop index ${d.indexname}`));

const nowMs = Date.now();
const dayMs = 86_400_000;
await step(
  'plans',
  sql`insert into plans (id, company_id, name, charge_amount, charge_denomination, billing_period, overage_charge_mode, balances, billing_rules, flags, metadata, created_at)
    select bench_id('p', ${n(nowMs - DAYS * dayMs)} + g), ${company.id}, 'Plan ' || g, 1000 * g, 'USD', 'month', 'none',
      jsonb_build_array(jsonb_build_object('amount', '1000', 'denomination', 'tokens', 'overage_charge_amount', 0, 'overage_charge_denomination', 'USD', 'variable_unit_price', null)),
      jsonb_build_array(jsonb_build_object('type', 'query', 'amount', '1', 'denomination', 'tokens')), '{}'::jsonb, '{}'::jsonb, now()
    from generate_series(1, 5) g`,
);
await step(
  `${ACCOUNTS} accounts`,
  sql`create table bench_accounts as
    select g as n, bench_id('a', ${n(nowMs - DAYS * dayMs)}::bigint + (g::bigint * ${n(Math.floor((DAYS * dayMs) / ACCOUNTS))})) as id from generate_series(1, ${n(ACCOUNTS)}) g`,
);
await step(
  'accounts rows',
  sql`insert into accounts (id, company_id, name, email, metadata, processor_id, plan_id, plan_status, plan_renewal_cadence, flags, created_at, updated_at)
    select a.id, ${company.id}, 'Customer ' || a.n, 'customer' || a.n || '@example.com', '{}'::jsonb, 'cus_' || a.n,
      (select id from plans where company_id = ${company.id} order by id limit 1), 'ACTIVE', 'MONTHLY', '[]'::jsonb,
      to_timestamp(${n(nowMs - DAYS * dayMs)}::bigint / 1000.0 + a.n * ${sql.raw(String((DAYS * dayMs) / ACCOUNTS / 1000))}), null
    from bench_accounts a`,
);
await step(
  'other company accounts',
  sql`insert into accounts (id, company_id, name, email, metadata, flags, created_at)
    select bench_id('a', ${n(nowMs)} - g * 60000), ${other.id}, 'Other ' || g, 'other' || g || '@example.com', '{}'::jsonb, '[]'::jsonb, now() - g * interval '1 minute'
    from generate_series(1, 1000) g`,
);
await step(
  'balances',
  sql`insert into balances (id, account_id, company_id, denomination, amount, created_at)
    select bench_id('b', ${n(nowMs - DAYS * dayMs)}::bigint + n), id, ${company.id}, d, (random() * 1000)::numeric(12, 2), now()
    from bench_accounts, unnest(array['tokens', 'storage-GB']) d`,
);

// Events: skewed towards low account numbers (a few very busy accounts), 93% complete,
// 3% rejected, 3% cancelled, 1% pending; one in ten unbilled.
for (let done = 0; done < EVENTS; done += CHUNK) {
  const size = Math.min(CHUNK, EVENTS - done);
  await step(
    `events ${done + size}`,
    sql`with src as (
        select (${n(nowMs)}::bigint - floor(random() * ${n(DAYS * dayMs)})::bigint) as ms,
          1 + floor(power(random(), 2) * ${n(ACCOUNTS)})::int as n, random() as r, (array['query', 'upload', 'compute', 'export', 'login'])[1 + floor(random() * 5)::int] as type
        from generate_series(1, ${n(size)})
      )
      insert into events (id, company_id, account_id, type, state, cost_amount, cost_denomination, priced_by, gate_on_balance, metadata, created_at, updated_at, expires_at)
      select bench_id('ev', s.ms), ${company.id}, a.id, s.type,
        case when s.r < 0.03 then 'rejected' when s.r < 0.06 then 'cancelled' when s.r < 0.07 then 'pending' else 'complete' end,
        case when s.r > 0.9 then null else round((s.r * 10)::numeric, 3) end,
        case when s.r > 0.9 then null when s.type = 'upload' then 'storage-GB' else 'tokens' end,
        case when s.r > 0.9 then 'none' else 'plan' end, s.r < 0.05, '{}'::jsonb,
        to_timestamp(s.ms / 1000.0), to_timestamp(s.ms / 1000.0),
        case when s.r >= 0.06 and s.r < 0.07 then to_timestamp(s.ms / 1000.0) + interval '1 hour' end
      from src s join bench_accounts a on a.n = s.n`,
  );
}
await step(
  'other company events',
  sql`insert into events (id, company_id, account_id, type, state, cost_amount, cost_denomination, priced_by, metadata, created_at)
    select bench_id('ev', ${n(nowMs)} - g * 1000), ${other.id}, (select id from accounts where company_id = ${other.id} limit 1), 'query', 'complete', 1, 'tokens', 'plan', '{}'::jsonb, to_timestamp((${n(nowMs)} - g * 1000) / 1000.0)
    from generate_series(1, 10000) g`,
);
await step(
  'ledger rows (one per complete billed event, first 3M)',
  sql`insert into transactions (id, account_id, company_id, balance_id, denomination, type, description, amount, starting_balance, ending_balance, event_id, created_at)
    select 'tx_' || substr(e.id, 4), e.account_id, e.company_id, b.id, e.cost_denomination, 'event', 'Event ' || e.type, -e.cost_amount, 0, -e.cost_amount, e.id, e.created_at
    from (select * from events where state = 'complete' and cost_amount is not null limit 3000000) e
    join balances b on b.account_id = e.account_id and b.denomination = e.cost_denomination`,
);
// Renewals spread over the month (an account renews on the day it started), three months back.
const renewal = (m: string) => `${nowMs}::bigint - ${m} * ${30 * dayMs} - a.n::bigint * ${Math.floor((30 * dayMs) / ACCOUNTS)}`;
await step(
  'charges (three monthly renewals per account, 2% failed)',
  sql`insert into charges (id, company_id, account_id, amount, reason, description, status, metadata, created_at)
    select bench_id('ch', ${sql.raw(renewal('m'))}), ${company.id}, a.id, 1000, 'plan_renewal', 'Plan renewal',
      case when random() < 0.02 then 'failed' else 'succeeded' end, '{}'::jsonb, to_timestamp((${sql.raw(renewal('m'))}) / 1000.0)
    from bench_accounts a, generate_series(0, 2) m`,
);
const [webhook] = await query<{ id: string }>(
  db,
  sql`insert into webhooks (id, company_id, url, secret_enc, style, created_at) values (bench_id('w', ${n(nowMs - DAYS * dayMs)}), ${company.id}, 'https://example.com/hook', 'x', 'topic', now()) returning id`,
);
await step(
  'webhook deliveries',
  sql`insert into webhook_deliveries (id, company_id, webhook_id, topic, account_id, denomination, payload, status, attempts, created_at)
    select bench_id('whd', ${n(nowMs)}::bigint - g::bigint * 30000), ${company.id}, ${webhook.id}, 'balance_change', a.id, 'tokens', '{}'::jsonb, 'succeeded', 1, to_timestamp((${n(nowMs)}::bigint - g::bigint * 30000) / 1000.0)
    from generate_series(1, 200000) g join bench_accounts a on a.n = 1 + g % ${n(ACCOUNTS)}`,
);
await step(
  'webhook attempts',
  sql`insert into webhook_attempts (id, delivery_id, response_status, duration_ms, created_at)
    select 'wha_' || substr(id, 5), id, 200, 12, created_at from webhook_deliveries where webhook_id = ${webhook.id}`,
);

for (const d of defs) await step(`index ${d.indexname}`, sql.raw(d.indexdef));
await db.execute(sql.raw('drop table bench_accounts'));
await db.execute(sql.raw('drop function bench_id(text, bigint)'));
await step('vacuum analyze', sql.raw('vacuum analyze'));
console.log(`seeded in ${((Date.now() - t0) / 1000).toFixed(0)} s; company ${company.id}; console sign-in ${company.email} / bench-password`);
await database.close();
