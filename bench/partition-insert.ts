/**
 * Insert rate into `events` as it is versus the same table range-partitioned by month with
 * pg_partman (the plan in README.md, "Partitioning events and transactions by time"), in the
 * same database, alternately. Rows spread over the last 90 days, inserted 1,000 per statement.
 *
 *   node scripts/pg.mjs start 55500   # PG_DURABLE=1 for durable commits; then create database "parts"
 *   DATABASE_URL=postgres://postgres@127.0.0.1:55500/parts npx tsx bench/partition-insert.ts
 *
 * Both copies have the indexes of `events` except `events_idempotency` (the plan moves it to a
 * table of its own), so they differ only in the partitioning.
 */
import { openPostgres, query, sql } from '../lib/db/client';

const url = process.env.DATABASE_URL;
if (!url) throw new Error('Set DATABASE_URL to a throwaway PostgreSQL database.');
const ROWS = Number(process.env.ROWS ?? 200_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const BATCH = 1000;
const database = await openPostgres(url, { max: 2 });
const db = database.db;
const run = (text: string) => db.execute(sql.raw(text));

await run('create schema if not exists partman');
await run('create extension if not exists pg_partman schema partman');
await run('drop table if exists events_plain, events_part cascade');
await run("delete from partman.part_config where parent_table = 'public.events_part'");
const indexes = await query<{ indexname: string; indexdef: string }>(
  db,
  sql.raw(`select indexname, indexdef from pg_indexes where tablename = 'events' and indexname not in ('events_pkey', 'events_idempotency')`),
);
await run('create table events_plain (like events including defaults including constraints)');
await run('alter table events_plain add primary key (id)');
await run('create table events_part (like events including defaults including constraints) partition by range (created_at)');
await run('alter table events_part add primary key (id, created_at)');
for (const copy of ['events_plain', 'events_part']) {
  for (const i of indexes) await run(i.indexdef.replace(i.indexname, `${copy}_${i.indexname}`).replace(' ON public.events ', ` ON public.${copy} `));
}
const start = new Date(Date.now() - 100 * 86_400_000);
await run(
  `select partman.create_parent('public.events_part', 'created_at', 'native', 'monthly', p_premake := 2, p_start_partition := '${start.toISOString().slice(0, 10)}')`,
);
const [{ n: partitions }] = await query<{ n: number }>(db, sql.raw(`select count(*)::int as n from pg_inherits where inhparent = 'events_part'::regclass`));

const insert = async (table: string) => {
  const t = performance.now();
  for (let done = 0; done < ROWS; done += BATCH) {
    await run(`insert into ${table} (id, company_id, account_id, type, state, cost_amount, cost_denomination, priced_by, gate_on_balance, metadata, created_at, updated_at)
      select 'ev_' || md5(random()::text), 'c_bench', 'a_' || (g % 1000), 'query', 'complete', 0.01, 'tokens', 'plan', false, '{}'::jsonb, ts, ts
      from (select g, now() - random() * interval '90 days' as ts from generate_series(1, ${BATCH}) g) s`);
  }
  return ROWS / ((performance.now() - t) / 1000);
};

console.log(`${ROWS} rows per table per round, ${BATCH} per statement; events_part has ${partitions} monthly partitions`);
for (let round = 1; round <= ROUNDS; round++) {
  const plain = await insert('events_plain');
  const part = await insert('events_part');
  console.log(`round ${round}: plain ${Math.round(plain)} rows/s, partitioned ${Math.round(part)} rows/s, ratio ${(part / plain).toFixed(2)}`);
}
await run('drop table if exists events_plain, events_part cascade');
await run("delete from partman.part_config where parent_table = 'public.events_part'");
await database.close();
